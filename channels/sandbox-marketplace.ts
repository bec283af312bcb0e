// The marketplace sandbox (`npm run sandbox:marketplace`, or in-process via startMarketplaceSandbox): a real HTTP
// marketplace speaking the SANDBOX channel protocol (docs/channels.md). It keeps listed quantities, applies pushes
// after a configurable lag, enforces a rate limit (429 + Retry-After), sells to simulated buyers only what it lists,
// and delivers those orders to lastunit as signed webhooks, with duplicates, delays and reordering when asked.
import http from 'node:http';
import { randomUUID } from 'node:crypto';
import { SANDBOX_SIGNATURE_HEADER } from './inbound.js';
import { signSandbox } from './sign.js';
import { timers } from '../common/every.js';

export type MarketplaceSandboxConfig = {
  /** where orders go: lastunit's POST /webhooks/channels/<channel id> */
  webhookUrl?: string;
  /** the channel's webhook secret (createChannel's answer) */
  webhookSecret?: string;
  /** a push is acknowledged at once but shows in the listing only this much later (the marketplace's own lag) */
  lagMs?: number;
  /** listing writes per second before 429 (0: no limit) */
  maxRequestsPerSecond?: number;
  /** the chance (0-1) that an order webhook is delivered twice */
  duplicateRate?: number;
  /** each delivery waits a random 0..maxDelayMs (so deliveries overtake each other) */
  maxDelayMs?: number;
  /** random source (tests and the bench pass a seeded one) */
  random?: () => number;
};
export type MarketplaceSandboxOptions = MarketplaceSandboxConfig & { port?: number; host?: string };

type Listing = { quantity: number; version: number; updatedAt: number };
export type MarketplaceStats = {
  pushes: number;
  rateLimited: number;
  stalePushes: number;
  orders: number;
  unitsSold: number;
  deliveries: number;
  cancelRequests: number;
  cancelled: number;
};
export type MarketplaceSandbox = {
  url: string;
  port: number;
  configure(c: MarketplaceSandboxConfig): void;
  /** what buyers see now (lagged pushes not yet applied are not shown) */
  listed(sku: string): number;
  listing(sku: string): Listing | undefined;
  /** a buyer takes `quantity` if listed: the listing drops and an order.created webhook goes out; null when not listed */
  buy(sku: string, quantity?: number): string | null;
  /** simulated buyers: `perSecond` purchases of one unit of a random listed SKU among `skus`; returns a stop function */
  startBuyers(skus: string[], perSecond: number): () => void;
  /** the marketplace cancels one of its orders (order.cancelled webhook) */
  cancelOrder(externalOrderId: string): void;
  /** every accepted push in arrival order */
  pushLog(): { sku: string; quantity: number; version: number }[];
  /** orders lastunit asked to cancel */
  cancelRequests(): string[];
  stats(): MarketplaceStats;
  /** resolves when every delivery scheduled so far has been answered */
  idle(): Promise<void>;
  close(): Promise<void>;
};

/** @example const m = await startMarketplaceSandbox({ webhookUrl, webhookSecret, lagMs: 200, maxRequestsPerSecond: 5 }) */
export async function startMarketplaceSandbox(opts: MarketplaceSandboxOptions = {}): Promise<MarketplaceSandbox> {
  const cfg: MarketplaceSandboxConfig = { lagMs: 0, maxRequestsPerSecond: 5, duplicateRate: 0, maxDelayMs: 0, ...opts };
  const random = () => (cfg.random ?? Math.random)();
  const listings = new Map<string, Listing>();
  const accepted = new Map<string, number>(); // sku -> newest version accepted (applied or waiting out the lag)
  const keys = new Map<string, { status: number; body: string }>();
  const orders = new Map<string, { sku: string; quantity: number; cancelled: boolean }>();
  const cancelAsks: string[] = [];
  const log: { sku: string; quantity: number; version: number }[] = [];
  const stats: MarketplaceStats = {
    pushes: 0,
    rateLimited: 0,
    stalePushes: 0,
    orders: 0,
    unitsSold: 0,
    deliveries: 0,
    cancelRequests: 0,
    cancelled: 0,
  };
  const inflight = new Set<Promise<unknown>>();
  const scheduled = timers();
  const later = scheduled.later;
  let window = { second: 0, count: 0 };
  const pending = () => {
    let done!: () => void;
    const p = new Promise<void>((r) => (done = r));
    inflight.add(p);
    return () => {
      inflight.delete(p);
      done();
    };
  };

  function deliver(body: string, attempt = 1, finished = pending()): void {
    if (!cfg.webhookUrl || !cfg.webhookSecret || scheduled.cancelled) {
      finished();
      return;
    }
    later(Math.floor(random() * (cfg.maxDelayMs ?? 0)), () => {
      stats.deliveries++;
      fetch(cfg.webhookUrl!, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          [SANDBOX_SIGNATURE_HEADER]: signSandbox(body, cfg.webhookSecret!),
        },
        body,
      })
        .then(async (r) => {
          await r.body?.cancel().catch(() => {});
          if (r.status >= 500 && attempt < 8 && !scheduled.cancelled) deliver(body, attempt + 1, finished);
          else finished();
        })
        .catch(() => {
          if (attempt < 8 && !scheduled.cancelled) later(100 * attempt, () => deliver(body, attempt + 1, finished));
          else finished();
        });
    });
  }
  const send = (event: Record<string, unknown>) => {
    const body = JSON.stringify({ eventId: `mevt_${randomUUID()}`, ...event });
    deliver(body);
    if (random() < (cfg.duplicateRate ?? 0)) deliver(body); // at least once: the same event again
  };

  const read = (req: http.IncomingMessage) =>
    new Promise<string>((resolve, reject) => {
      let data = '';
      req.setEncoding('utf8');
      req.on('data', (c: string) => {
        data += c;
        if (data.length > 65_536) req.destroy(new Error('too large'));
      });
      req.on('end', () => resolve(data));
      req.on('error', reject);
    });

  const server = http.createServer(async (req, res) => {
    const reply = (status: number, body: unknown, headers: Record<string, string> = {}) => {
      res.writeHead(status, { 'content-type': 'application/json', ...headers });
      res.end(JSON.stringify(body));
    };
    try {
      const url = new URL(req.url ?? '/', 'http://sandbox');
      const put = /^\/listings\/([^/]+)$/.exec(url.pathname);
      if (req.method === 'PUT' && put) {
        const sku = decodeURIComponent(put[1]!);
        const key = req.headers['idempotency-key'];
        const raw = await read(req);
        if (typeof key !== 'string' || !key) return reply(400, { error: 'Idempotency-Key header required' });
        const seen = keys.get(key);
        if (seen) return reply(seen.status, JSON.parse(seen.body), { 'idempotent-replayed': 'true' });
        const second = Math.floor(Date.now() / 1000);
        if (window.second !== second) window = { second, count: 0 };
        if (cfg.maxRequestsPerSecond && ++window.count > cfg.maxRequestsPerSecond) {
          stats.rateLimited++;
          return reply(429, { error: 'rate limited' }, { 'retry-after': '1' });
        }
        const b = JSON.parse(raw || '{}') as { quantity?: unknown; version?: unknown };
        if (!Number.isInteger(b.quantity) || (b.quantity as number) < 0 || !Number.isInteger(b.version))
          return reply(400, { error: 'body must be {"quantity": integer >= 0, "version": integer}' });
        const quantity = b.quantity as number;
        const version = b.version as number;
        stats.pushes++;
        let answer: { status: number; body: unknown };
        if (version < (accepted.get(sku) ?? -Infinity)) {
          stats.stalePushes++;
          answer = { status: 409, body: { error: 'stale version', version: accepted.get(sku) } };
        } else {
          accepted.set(sku, version);
          log.push({ sku, quantity, version });
          const apply = () => {
            const cur = listings.get(sku);
            if (!cur || cur.version <= version) listings.set(sku, { quantity, version, updatedAt: Date.now() });
          };
          if (cfg.lagMs) later(cfg.lagMs, apply);
          else apply();
          answer = { status: 200, body: { sku, quantity, version } };
        }
        keys.set(key, { status: answer.status, body: JSON.stringify(answer.body) });
        return reply(answer.status, answer.body);
      }
      const cancel = /^\/orders\/([^/]+)\/cancel$/.exec(url.pathname);
      if (req.method === 'POST' && cancel) {
        await read(req);
        const id = decodeURIComponent(cancel[1]!);
        stats.cancelRequests++;
        const o = orders.get(id);
        if (!o) return reply(404, { error: 'no such order' });
        if (!o.cancelled) {
          o.cancelled = true;
          stats.cancelled++;
          cancelAsks.push(id);
        }
        return reply(200, { id, cancelled: true });
      }
      if (req.method === 'GET' && url.pathname === '/_sandbox/state') {
        return reply(200, { listings: Object.fromEntries(listings), stats });
      }
      reply(404, { error: 'not found' });
    } catch (err) {
      reply(400, { error: String((err as Error)?.message ?? err) });
    }
  });
  await new Promise<void>((resolve) => server.listen(opts.port ?? 0, opts.host ?? '127.0.0.1', () => resolve()));
  const port = (server.address() as { port: number }).port;

  const self: MarketplaceSandbox = {
    url: `http://127.0.0.1:${port}`,
    port,
    configure: (c) => Object.assign(cfg, c),
    listed: (sku) => listings.get(sku)?.quantity ?? 0,
    listing: (sku) => listings.get(sku),
    buy(sku, quantity = 1) {
      const l = listings.get(sku);
      if (!l || l.quantity < quantity) return null;
      l.quantity -= quantity; // the marketplace's own count drops at once; lastunit hears of it by webhook
      const id = `mord_${randomUUID()}`;
      orders.set(id, { sku, quantity, cancelled: false });
      stats.orders++;
      stats.unitsSold += quantity;
      send({
        type: 'order.created',
        externalOrderId: id,
        customer: `buyer-${stats.orders}`,
        lines: [{ sku, quantity }],
      });
      return id;
    },
    startBuyers(skus, perSecond) {
      const t = setInterval(
        () => {
          const listed = skus.filter((sku) => (listings.get(sku)?.quantity ?? 0) > 0);
          const sku = listed[Math.floor(random() * listed.length)];
          if (sku) self.buy(sku, 1);
        },
        Math.max(1, Math.round(1000 / perSecond)),
      );
      return () => clearInterval(t);
    },
    cancelOrder(id) {
      const o = orders.get(id);
      if (!o || o.cancelled) return;
      o.cancelled = true;
      send({ type: 'order.cancelled', externalOrderId: id });
    },
    cancelRequests: () => [...cancelAsks],
    pushLog: () => [...log],
    stats: () => ({ ...stats }),
    async idle() {
      while (inflight.size) await Promise.all([...inflight]);
    },
    async close() {
      scheduled.cancel();
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
      for (const p of inflight) void p;
    },
  };
  return self;
}
