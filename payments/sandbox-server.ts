import http from 'node:http';
import { randomUUID } from 'node:crypto';
import { SIGNATURE_HEADER, signPayload } from './webhook-signature.js';
import { timers } from '../common/every.js';

/**
 * The sandbox processor: a real HTTP service, deterministic by token so anyone can reproduce every outcome.
 *   tok_approve           approved at once
 *   tok_decline           declined at once (card_declined)
 *   tok_timeout_approve   records the success at once, answers only after `hangMs` (after the caller gave up)
 *   tok_timeout_decline   records the decline at once, answers only after `hangMs`
 *   tok_slow_<ms>         pending for <ms>, then approved
 *   tok_error_then_approve  the first call for an order answers 500 (nothing recorded), later calls approve
 *   tok_3ds_approve       needs the shopper (3-D Secure): answers `action_required` with a next action; completing it
 *                         (POST /_sandbox/actions/:key {"result":"approve"|"fail"}) approves (or fails) the payment
 *   tok_3ds_fail          the same, but the authentication fails whatever the shopper does
 *   tok_3ds_abandon       the same; the shopper never comes back (only a cancel ends it)
 *   anything else         declined (unknown_token)
 * Idempotent by payment key (the order id for an order's first attempt, `<order id>:<n>` after): a second authorize
 * with a key never charges again, it answers the recorded outcome.
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
type Charge = {
  status: 'succeeded' | 'failed' | 'pending' | 'requires_action' | 'canceled';
  orderId: string;
  token: string;
  providerRef: string;
  requests: number;
  charges: number;
  voids: number;
  voidRequests: number;
  errors: number;
  cancels: number;
  captures: number;
  refunds: number;
};
export type Sandbox = {
  url: string;
  port: number;
  configure(c: SandboxConfig): void;
  charge(key: string): Charge | null;
  close(): Promise<void>;
};

/** @example const sandbox = await startSandbox({ webhookSecret, webhookUrl: 'http://127.0.0.1:4000/webhooks/payments/sandbox' }) */
export async function startSandbox(opts: SandboxOptions): Promise<Sandbox> {
  const cfg: SandboxConfig = { hangMs: 10_000, ...opts };
  const charges = new Map<string, Charge>();
  const scheduled = timers();
  const later = scheduled.later;
  let held: string[] = [];

  const deliver = (body: string, attempt = 1) => {
    if (!cfg.webhookUrl || scheduled.cancelled) return;
    fetch(cfg.webhookUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json', [SIGNATURE_HEADER]: signPayload(body, opts.webhookSecret) },
      body,
    })
      .then((r) => {
        if (r.status >= 500 && attempt < 5) later(100 * attempt, () => deliver(body, attempt + 1));
      })
      .catch(() => {
        if (attempt < 5) later(100 * attempt, () => deliver(body, attempt + 1));
      });
  };
  const webhook = (key: string, c: Charge) => {
    const type = {
      succeeded: 'payment.succeeded',
      failed: 'payment.failed',
      requires_action: 'payment.requires_action',
      canceled: 'payment.canceled',
      pending: 'payment.pending',
    }[c.status];
    const body = JSON.stringify({
      id: `evt_${type}_${key}`,
      type,
      orderId: c.orderId,
      paymentKey: key,
      providerRef: c.providerRef,
      reason: c.status === 'failed' ? 'card_declined' : undefined,
      nextAction: c.status === 'requires_action' ? nextAction(key, c) : undefined,
      created: Date.now(),
    });
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

  const fresh = (orderId = '', token = ''): Charge => ({
    status: 'failed',
    orderId,
    token,
    providerRef: '',
    requests: 0,
    charges: 0,
    voids: 0,
    voidRequests: 0,
    errors: 0,
    cancels: 0,
    captures: 0,
    refunds: 0,
  });
  const nextAction = (key: string, c: Charge) => ({
    type: 'three_d_secure',
    clientSecret: `${c.providerRef}_secret`,
    redirectUrl: `${base()}/_sandbox/actions/${encodeURIComponent(key)}`,
  });
  const authorize = (
    res: http.ServerResponse,
    b: { orderId: string; key?: string; amount: number; currency: string; token: string },
  ) => {
    const tok = String(b.token);
    const key = String(b.key ?? b.orderId);
    const known = charges.get(key);
    if (known?.providerRef) {
      // idempotent by payment key: the recorded outcome, never a second charge
      known.requests++;
      if (known.status === 'pending') return later(50, () => authorize(res, b));
      return send(res, 200, answer(key, known, base()));
    }
    const c = known ?? fresh(b.orderId, tok);
    charges.set(key, c);
    c.requests++;
    if (tok === 'tok_error_then_approve' && c.errors === 0) {
      c.errors++; // nothing recorded: a later call starts afresh
      return send(res, 500, { error: 'processor_error' });
    }
    c.providerRef = `sbx_${randomUUID()}`;
    const approve = () => {
      c.status = 'succeeded';
      c.charges++;
      webhook(key, c);
    };
    const decline = () => {
      c.status = 'failed';
      webhook(key, c);
    };
    if (tok.startsWith('tok_3ds_')) {
      c.status = 'requires_action';
      webhook(key, c);
      return send(res, 200, answer(key, c, base()));
    }
    const slow = /^tok_slow_(\d+)$/.exec(tok);
    if (tok === 'tok_timeout_approve' || tok === 'tok_timeout_decline') {
      if (tok === 'tok_timeout_approve') approve();
      else decline();
      return later(cfg.hangMs!, () => send(res, 200, answer(key, c, base()))); // recorded now, answered after the caller gave up
    }
    if (slow) {
      c.status = 'pending';
      return later(Number(slow[1]), () => {
        if (c.status !== 'pending') return send(res, 200, answer(key, c, base())); // cancelled meanwhile
        approve();
        send(res, 200, answer(key, c, base()));
      });
    }
    if (tok === 'tok_approve' || tok === 'tok_error_then_approve') approve();
    else decline();
    send(res, 200, answer(key, c, base()));
  };
  /** The shopper completes (or fails) the 3-D Secure step: the payment is decided and its webhook sent. */
  const completeAction = (key: string, result: string) => {
    const c = charges.get(key);
    if (c?.status !== 'requires_action') return { status: c?.status ?? 'not_found' };
    if (c.token === 'tok_3ds_approve' && result === 'approve') {
      c.status = 'succeeded';
      c.charges++;
    } else c.status = 'failed';
    webhook(key, c);
    return { status: c.status };
  };
  /** Cancel an undecided payment; a decided one answers what it is (a success that won the race stays a success). */
  const cancel = (key: string) => {
    const c = charges.get(key);
    if (!c?.providerRef) return { status: 'canceled' }; // never authorized: nothing can succeed under this key any more
    c.cancels++;
    if (c.status === 'pending' || c.status === 'requires_action') {
      c.status = 'canceled';
      webhook(key, c);
    }
    return { status: c.status };
  };
  let base = () => '';

  const server = http.createServer((req, res) => {
    let raw = '';
    req.on('data', (d) => (raw += d));
    req.on('end', () => {
      const url = new URL(req.url ?? '/', 'http://sandbox');
      const m = /^\/(v1\/payments|_sandbox\/charges|_sandbox\/actions)\/([^/]+)(\/void|\/cancel|\/capture)?$/.exec(
        url.pathname,
      );
      const key = m ? decodeURIComponent(m[2]!) : '';
      try {
        if (req.method === 'POST' && url.pathname === '/v1/authorize') return authorize(res, JSON.parse(raw));
        if (req.method === 'POST' && url.pathname === '/_sandbox/config') {
          Object.assign(cfg, JSON.parse(raw));
          return send(res, 200, cfg);
        }
        if (m && m[1] === 'v1/payments' && req.method === 'GET' && !m[3]) {
          const c = charges.get(key);
          const status = !c?.providerRef
            ? 'not_found'
            : c.status === 'requires_action'
              ? 'pending'
              : c.status === 'canceled'
                ? 'failed'
                : c.status;
          return send(res, 200, { status, captured: !!c && c.captures > 0 });
        }
        if (m && m[1] === 'v1/payments' && req.method === 'POST' && m[3] === '/void') {
          const c = charges.get(key);
          if (c) {
            c.voidRequests++;
            if (c.status === 'succeeded' && c.voids === 0) {
              c.voids = 1; // idempotent: the money goes back once
              if (c.captures > 0) c.refunds = 1; // after capture the money goes back as a refund, before as a cancel
            }
          }
          return send(res, 200, { voided: !!c && c.voids > 0, refunded: !!c && c.refunds > 0 });
        }
        if (m && m[1] === 'v1/payments' && req.method === 'POST' && m[3] === '/cancel')
          return send(res, 200, cancel(key));
        if (m && m[1] === 'v1/payments' && req.method === 'POST' && m[3] === '/capture') {
          const c = charges.get(key);
          if (c?.status !== 'succeeded' || c.voids > 0)
            return send(res, 409, { error: 'not_capturable', status: c?.status ?? 'not_found' });
          if (c.captures === 0) c.captures = 1; // idempotent: captured once however often asked
          return send(res, 200, { captured: true });
        }
        if (m && m[1] === '_sandbox/actions' && req.method === 'POST')
          return send(res, 200, completeAction(key, String(JSON.parse(raw || '{}').result ?? 'approve')));
        if (m && m[1] === '_sandbox/charges' && req.method === 'GET')
          return send(res, 200, charges.get(key) ?? { ...fresh(), status: 'not_found' });
        send(res, 404, { error: 'not_found' });
      } catch (err) {
        send(res, 400, { error: String(err) });
      }
    });
  });
  await new Promise<void>((r) => server.listen(opts.port ?? 0, opts.host ?? '127.0.0.1', () => r()));
  const port = (server.address() as { port: number }).port;
  base = () => `http://127.0.0.1:${port}`;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    configure: (c) => Object.assign(cfg, c),
    charge: (key) => charges.get(key) ?? null,
    close: async () => {
      scheduled.cancel();
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}

function answer(key: string, c: Charge, origin: string) {
  if (c.status === 'succeeded') return { outcome: 'approved', providerRef: c.providerRef };
  if (c.status === 'requires_action')
    return {
      outcome: 'action_required',
      providerRef: c.providerRef,
      nextAction: {
        type: 'three_d_secure',
        clientSecret: `${c.providerRef}_secret`,
        redirectUrl: `${origin}/_sandbox/actions/${encodeURIComponent(key)}`,
      },
    };
  return {
    outcome: 'declined',
    providerRef: c.providerRef,
    reason: c.status === 'canceled' ? 'canceled' : 'card_declined',
  };
}

function send(res: http.ServerResponse, status: number, body: unknown) {
  if (res.destroyed || res.writableEnded) return;
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
}
