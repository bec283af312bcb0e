// The outbound half of channels (docs/channels.md, "Push order"): sends each channel's newest desired quantity per SKU
// to its marketplace, outside any transaction, under the channel's rate limit, and asks marketplaces to cancel
// oversold orders and orders an admin cancelled. Any number of pushers may run: rows are leased with SKIP LOCKED.
import * as store from '../db/channels-store.js';
import type { Channel } from '../db/channels-store.js';
import type { Db } from '../db/pool.js';
import type { Metrics } from '../common/metrics.js';
import type { MarketplaceClient } from '../channels/marketplace-client.js';

export type PusherDeps = {
  db: Db;
  metrics: Metrics;
  /** the client for a channel (built once per channel and endpoint) */
  clientFor: (c: Channel) => MarketplaceClient;
  /** how long a leased row is left to this pusher before another may take it */
  leaseSeconds?: number;
  /** how long the channel list is kept (default 1000 ms) */
  channelListMs?: number;
  /** test hook: the random source of the backoff jitter */
  random?: () => number;
};

/** Jittered exponential backoff: 250 ms doubling per attempt up to 30 s, times a random 0.5-1.5. */
export const backoffMs = (attempts: number, random = Math.random) =>
  Math.min(30_000, 250 * 2 ** Math.min(attempts, 10)) * (0.5 + random());

type Bucket = { tokens: number; at: number; pausedUntil: number };

/**
 * One pusher: `pushOnce` sends what is due on every channel (channels in parallel, each under its own token bucket of
 * maxPushesPerSecond and its own 429 pause), `cancelOnce` asks for the cancellations of oversold orders. Both return
 * how much they sent; `nextDueMs` says when a channel's bucket or pause lets it send again.
 */
export function createChannelPusher(deps: PusherDeps) {
  const buckets = new Map<string, Bucket>();
  const clients = new Map<string, { key: string; client: MarketplaceClient }>();
  const random = deps.random ?? Math.random;
  const lease = deps.leaseSeconds ?? 30;
  let channels: Channel[] = [];
  let listedAt = 0;
  // the channel list is read at most once a second: a host with no channel pays no query per wake-up
  const refresh = async () => {
    if (Date.now() - listedAt < (deps.channelListMs ?? 1000)) return channels;
    channels = await store.listChannels(deps.db);
    listedAt = Date.now();
    return channels;
  };

  const clientOf = (c: Channel) => {
    const key = `${c.kind} ${c.endpoint}`;
    let entry = clients.get(c.id);
    if (!entry || entry.key !== key) clients.set(c.id, (entry = { key, client: deps.clientFor(c) }));
    return entry.client;
  };
  const bucketOf = (c: Channel, now: number) => {
    let b = buckets.get(c.id);
    if (!b) buckets.set(c.id, (b = { tokens: c.maxPushesPerSecond, at: now, pausedUntil: 0 }));
    b.tokens = Math.min(c.maxPushesPerSecond, b.tokens + ((now - b.at) / 1000) * c.maxPushesPerSecond);
    b.at = now;
    return b;
  };

  async function pushChannel(c: Channel): Promise<number> {
    let sent = 0;
    const client = clientOf(c);
    for (;;) {
      const now = Date.now();
      const b = bucketOf(c, now);
      if (b.pausedUntil > now || b.tokens < 1) return sent;
      const jobs = await store.leasePushes(deps.db, c.id, Math.min(50, Math.floor(b.tokens)), lease);
      if (jobs.length === 0) return sent;
      for (let i = 0; i < jobs.length; i++) {
        const j = jobs[i]!;
        if (b.pausedUntil > Date.now()) {
          // a 429 earlier in this batch: give the rest back at once, due when the pause ends
          await store.markPushFailed(deps.db, j, b.pausedUntil - Date.now(), 'paused after 429', false);
          continue;
        }
        b.tokens -= 1;
        // one key per (channel, SKU, version): a retried push of the same version is the same request to the marketplace
        const r = await client.push(
          { sku: j.sku, quantity: j.quantity, version: j.version, previous: j.previous },
          `lastunit:${c.id}:${j.sku}:${j.version}`,
        );
        deps.metrics.channelPushes.inc({ channel: c.id, result: r.kind });
        if (r.kind === 'ok' || r.kind === 'stale') {
          await store.markPushed(deps.db, { channelId: c.id, sku: j.sku, quantity: j.quantity, version: j.version });
          if (r.kind === 'ok')
            deps.metrics.channelPushLag.observe(
              { channel: c.id },
              Math.max(0, Date.now() - j.desiredAt.getTime()) / 1000,
            );
          sent++;
        } else if (r.kind === 'rate_limited') {
          deps.metrics.channelRateLimited.inc({ channel: c.id });
          b.pausedUntil = Date.now() + r.retryAfterMs; // this channel only
          await store.markPushFailed(deps.db, j, r.retryAfterMs, 'HTTP 429', false);
        } else {
          await store.markPushFailed(deps.db, j, backoffMs(j.attempts, random), r.error);
        }
      }
    }
  }

  return {
    async pushOnce(): Promise<number> {
      if ((await refresh()).length === 0) return 0;
      await store.recomputeBundleListings(deps.db);
      const due = new Set(await store.channelsWithWork(deps.db));
      const sent = await Promise.all(channels.filter((c) => due.has(c.id)).map(pushChannel));
      return sent.reduce((a, b) => a + b, 0);
    },

    async cancelOnce(): Promise<number> {
      let done = 0;
      if ((await refresh()).length === 0) return 0;
      const byId = new Map(channels.map((c) => [c.id, c]));
      for (const job of await store.leaseCancellations(deps.db, 20, lease)) {
        const c = byId.get(job.channelId) ?? (await store.findChannel(deps.db, job.channelId));
        if (!c) continue;
        const r = await clientOf(c).cancel(job.externalOrderId, `lastunit:cancel:${job.id}`);
        deps.metrics.channelCancellations.inc({ channel: c.id, result: r.kind === 'ok' ? 'ok' : 'failed' });
        if (r.kind === 'ok' || r.kind === 'stale') {
          await store.markCancelDone(deps.db, job.id);
          done++;
        } else {
          await store.markCancelFailed(
            deps.db,
            job.id,
            r.kind === 'rate_limited' ? r.retryAfterMs : backoffMs(job.attempts, random),
            r.kind === 'failed' ? r.error : 'HTTP 429',
          );
        }
      }
      return done;
    },

    /** Milliseconds until some channel that is out of tokens or paused may send again (undefined: none is waiting). */
    nextDueMs(): number | undefined {
      const now = Date.now();
      let next: number | undefined;
      for (const c of channels) {
        const b = buckets.get(c.id);
        if (!b) continue;
        const wait = Math.max(b.pausedUntil - now, b.tokens < 1 ? ((1 - b.tokens) / c.maxPushesPerSecond) * 1000 : 0);
        if (wait > 0) next = Math.min(next ?? wait, wait);
      }
      return next;
    },
  };
}

/**
 * The pusher loop: runs a pass when woken (after a committed stock change: the host's after-commit hook), when a
 * channel's tokens or pause come back, and every `pollMs` (the fallback for a wake-up lost to a crash). Never runs two
 * passes at once in one process. Returns `wake` and `stop`.
 * @example const pusher = startChannelPusher({ db, metrics, clientFor, pollMs: 200 }); onOutboxWritten = () => pusher.wake()
 */
export function startChannelPusher(deps: PusherDeps & { pollMs: number; onError?: (err: unknown) => void }) {
  const pusher = createChannelPusher(deps);
  let running: Promise<void> | undefined;
  let again = false;
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  const pass = async () => {
    await pusher.pushOnce();
    await pusher.cancelOnce();
  };
  const wake = (): void => {
    if (stopped) return;
    if (running) {
      again = true;
      return;
    }
    running = pass()
      .catch((err) => deps.onError?.(err))
      .finally(() => {
        running = undefined;
        if (again) {
          again = false;
          wake();
          return;
        }
        const next = pusher.nextDueMs();
        clearTimeout(timer);
        if (next !== undefined && !stopped) timer = setTimeout(wake, Math.ceil(next) + 5);
      });
  };
  const poll = setInterval(wake, deps.pollMs);
  wake();
  return {
    wake,
    pushOnce: pusher.pushOnce,
    async stop() {
      stopped = true;
      clearInterval(poll);
      clearTimeout(timer);
      await running;
    },
  };
}
