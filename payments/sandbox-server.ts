import http from 'node:http';
import { randomUUID } from 'node:crypto';
import { SIGNATURE_HEADER, signPayload } from './webhook-signature.js';

/**
 * The sandbox processor: a real HTTP service, deterministic by token so anyone can reproduce every outcome.
 *   tok_approve           approved at once
 *   tok_decline           declined at once (card_declined)
 *   tok_timeout_approve   records the success at once, answers only after `hangMs` (after the caller gave up)
 *   tok_timeout_decline   records the decline at once, answers only after `hangMs`
 *   tok_slow_<ms>         pending for <ms>, then approved
 *   tok_error_then_approve  the first call for an order answers 500 (nothing recorded), later calls approve
 *   anything else         declined (unknown_token)
 * Idempotent by order id: a second authorize for an order never charges again, it answers the recorded outcome.
 */
export type SandboxOptions = {
  port?: number;
  host?: string;
  webhookUrl?: string;
  webhookSecret: string;
  /** how long timeout tokens keep the caller waiting */
  hangMs?: number;
  /** deliver every webhook twice */
  twice?: boolean;
  /** deliver webhooks this late */
  delayMs?: number;
  /** hold webhooks and deliver each batch in reverse order */
  outOfOrder?: boolean;
};
export type SandboxConfig = Omit<SandboxOptions, 'port' | 'host' | 'webhookSecret'>;
type Charge = { status: 'succeeded' | 'failed' | 'pending'; providerRef: string; requests: number; charges: number; voids: number; voidRequests: number; errors: number };
export type Sandbox = { url: string; port: number; configure(c: SandboxConfig): void; charge(orderId: string): Charge | null; close(): Promise<void> };

/** @example const sandbox = await startSandbox({ webhookSecret, webhookUrl: 'http://127.0.0.1:4000/webhooks/payments/sandbox' }) */
export async function startSandbox(opts: SandboxOptions): Promise<Sandbox> {
  const cfg: SandboxConfig = { hangMs: 10_000, ...opts };
  const charges = new Map<string, Charge>();
  const timers = new Set<NodeJS.Timeout>();
  const later = (ms: number, fn: () => void) => {
    if (closed) return;
    const t = setTimeout(() => {
      timers.delete(t);
      fn();
    }, ms);
    timers.add(t);
  };
  let closed = false;
  let held: string[] = [];

  const deliver = (body: string, attempt = 1) => {
    if (!cfg.webhookUrl || closed) return;
    fetch(cfg.webhookUrl, { method: 'POST', headers: { 'content-type': 'application/json', [SIGNATURE_HEADER]: signPayload(body, opts.webhookSecret) }, body })
      .then((r) => {
        if (r.status >= 500 && attempt < 5) later(100 * attempt, () => deliver(body, attempt + 1));
      })
      .catch(() => {
        if (attempt < 5) later(100 * attempt, () => deliver(body, attempt + 1));
      });
  };
  const webhook = (orderId: string, c: Charge) => {
    const type = c.status === 'succeeded' ? 'payment.succeeded' : 'payment.failed';
    const body = JSON.stringify({ id: `evt_${type}_${orderId}`, type, orderId, providerRef: c.providerRef, reason: c.status === 'failed' ? 'card_declined' : undefined, created: Date.now() });
    const copies = cfg.twice ? 2 : 1;
    if (cfg.outOfOrder) {
      for (let i = 0; i < copies; i++) held.push(body);
      // the first held event starts the clock; the whole batch then goes out newest first
      if (held.length === copies)
        later(cfg.delayMs ?? 50, () => {
          const batch = held.reverse();
          held = [];
          for (const b of batch) deliver(b);
        });
      return;
    }
    for (let i = 0; i < copies; i++) later(cfg.delayMs ?? 0, () => deliver(body));
  };

  const fresh = (): Charge => ({ status: 'failed', providerRef: '', requests: 0, charges: 0, voids: 0, voidRequests: 0, errors: 0 });
  const authorize = (res: http.ServerResponse, b: { orderId: string; amount: number; currency: string; token: string }) => {
    const tok = String(b.token);
    const known = charges.get(b.orderId);
    if (known?.providerRef) {
      // idempotent by order id: the recorded outcome, never a second charge
      known.requests++;
      if (known.status === 'pending') return later(50, () => authorize(res, b));
      return send(res, 200, answer(known));
    }
    const c = known ?? fresh();
    charges.set(b.orderId, c);
    c.requests++;
    if (tok === 'tok_error_then_approve' && c.errors === 0) {
      c.errors++; // nothing recorded: a later call starts afresh
      return send(res, 500, { error: 'processor_error' });
    }
    c.providerRef = `sbx_${randomUUID()}`;
    const approve = () => {
      c.status = 'succeeded';
      c.charges++;
      webhook(b.orderId, c);
    };
    const decline = () => {
      c.status = 'failed';
      webhook(b.orderId, c);
    };
    const slow = /^tok_slow_(\d+)$/.exec(tok);
    if (tok === 'tok_timeout_approve' || tok === 'tok_timeout_decline') {
      if (tok === 'tok_timeout_approve') approve();
      else decline();
      return later(cfg.hangMs!, () => send(res, 200, answer(c))); // recorded now, answered after the caller gave up
    }
    if (slow) {
      c.status = 'pending';
      return later(Number(slow[1]), () => {
        approve();
        send(res, 200, answer(c));
      });
    }
    if (tok === 'tok_approve' || tok === 'tok_error_then_approve') approve();
    else decline();
    send(res, 200, answer(c));
  };

  const server = http.createServer((req, res) => {
    let raw = '';
    req.on('data', (d) => (raw += d));
    req.on('end', () => {
      const url = new URL(req.url ?? '/', 'http://sandbox');
      const m = /^\/(v1\/payments|_sandbox\/charges)\/([^/]+)(\/void)?$/.exec(url.pathname);
      try {
        if (req.method === 'POST' && url.pathname === '/v1/authorize') return authorize(res, JSON.parse(raw));
        if (req.method === 'POST' && url.pathname === '/_sandbox/config') {
          Object.assign(cfg, JSON.parse(raw));
          return send(res, 200, cfg);
        }
        if (m && m[1] === 'v1/payments' && req.method === 'GET' && !m[3]) {
          const c = charges.get(m[2]!);
          return send(res, 200, { status: !c || !c.providerRef ? 'not_found' : c.status });
        }
        if (m && m[1] === 'v1/payments' && req.method === 'POST' && m[3]) {
          const c = charges.get(m[2]!);
          if (c) {
            c.voidRequests++;
            if (c.status === 'succeeded' && c.voids === 0) c.voids = 1;  // idempotent: the money goes back once
          }
          return send(res, 200, { voided: !!c && c.voids > 0 });
        }
        if (m && m[1] === '_sandbox/charges' && req.method === 'GET') return send(res, 200, charges.get(m[2]!) ?? { ...fresh(), status: 'not_found' });
        send(res, 404, { error: 'not_found' });
      } catch (err) {
        send(res, 400, { error: String(err) });
      }
    });
  });
  await new Promise<void>((r) => server.listen(opts.port ?? 0, opts.host ?? '127.0.0.1', () => r()));
  const port = (server.address() as { port: number }).port;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    configure: (c) => Object.assign(cfg, c),
    charge: (orderId) => charges.get(orderId) ?? null,
    close: async () => {
      closed = true;
      for (const t of timers) clearTimeout(t);
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}

function answer(c: Charge) {
  return c.status === 'succeeded'
    ? { outcome: 'approved', providerRef: c.providerRef }
    : { outcome: 'declined', providerRef: c.providerRef, reason: 'card_declined' };
}

function send(res: http.ServerResponse, status: number, body: unknown) {
  if (res.destroyed || res.writableEnded) return;
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
}
