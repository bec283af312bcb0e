// The outbox relay: publishes committed outbox rows to live subscribers (and refreshes the availability cache), at
// least once, batch by batch, several relays sharing the work.
import type { Db } from '../db/pool.js';
import { listenOutbox, publishOutboxBatch, type OutboxEvent } from '../db/outbox-store.js';
import type { Metrics } from '../common/metrics.js';
import type { ProductCache } from './availability-cache.js';
import type { LivePubSub } from './pubsub.js';

export type RelayDeps = {
  db: Db;
  pubsub: LivePubSub;
  metrics: Metrics;
  cache?: ProductCache;
  /** outbox rows per relay batch (RELAY_BATCH_SIZE) */
  batchSize: number;
  /** how long a claimed batch is this relay's before any relay may claim it again (RELAY_LEASE_MS) */
  leaseMs: number;
  /** test hook: runs after a batch was published and before it is marked, e.g. to crash mid-batch */
  afterPublish?: (events: OutboxEvent[]) => Promise<void> | void;
};

/**
 * A batch of outbox rows as pubsub messages, in outbox order; order events carry the order read once by the claim
 * query. Other topics (written by later features) are marked published without a message: nobody subscribes here.
 */
function toMessages(events: OutboxEvent[]): Parameters<LivePubSub['publishMany']>[0] {
  const out: Parameters<LivePubSub['publishMany']>[0] = [];
  for (const e of events) if (e.message) out.push({ ...e.message, key: e.aggregateKey });
  return out;
}

/**
 * Drains the outbox: batch after batch until one comes back short of `batchSize` (a row committed after that claim
 * wakes the relay again: its writer's wake or NOTIFY, else the poll). Each batch is leased with SKIP LOCKED,
 * published, then marked (publishOutboxBatch), so several relays share the work and a crash between publish and mark
 * only republishes (at least once; clients drop repeats by version).
 * @example await relayOnce({ db, pubsub, metrics, batchSize: 200, leaseMs: 5000 })
 */
export async function relayOnce(deps: RelayDeps): Promise<number> {
  let total = 0;
  for (;;) {
    const n = await publishOutboxBatch(deps.db, deps.batchSize, deps.leaseMs, async (events) => {
      const claimedAt = performance.now();
      await deps.pubsub.publishMany(toMessages(events)); // one round trip per batch
      await deps.afterPublish?.(events);
      // commit-to-delivery: the row's age when claimed (database clock) plus how long publishing it took here
      const publishing = (performance.now() - claimedAt) / 1000;
      for (const e of events) {
        deps.metrics.outboxPublished.inc({ topic: e.topic });
        deps.metrics.outboxDeliveryLag.observe(e.ageSeconds + publishing);
      }
      if (deps.cache) {
        // the cache follows the events it has seen; a failure here only shortens its life to the TTL
        const cache = deps.cache;
        await Promise.all(
          events.map((e) =>
            e.message?.topic === 'availability' ? cache.applyAvailability(e.message.event) : undefined,
          ),
        );
      }
    });
    total += n;
    if (n < deps.batchSize) return total;
  }
}

/**
 * The relay loop: woken by LISTEN/NOTIFY on a dedicated connection, with a poll every `pollMs` as the fallback for a
 * NOTIFY that was never sent (crash after commit) or lost, and by `wake()` from a write of its own process that has
 * committed (no NOTIFY round trip before the rows are read). Never runs two drains at once in one process.
 * Returns a stop function with `wake`.
 */
export function startRelay(deps: RelayDeps & { listenUrl?: string; pollMs: number; onError?: (err: unknown) => void }) {
  const onError = deps.onError ?? (() => {});
  let running: Promise<unknown> | undefined;
  let again = false;
  let stopped = false;
  const drain = (): void => {
    if (stopped) return;
    if (running) {
      again = true; // a wake-up during a drain: drain once more afterwards
      return;
    }
    running = relayOnce(deps)
      .catch((err) => {
        deps.metrics.relayFailures.inc();
        onError(err);
      })
      .finally(() => {
        running = undefined;
        if (again) {
          again = false;
          drain();
        }
      });
  };
  const poll = setInterval(drain, deps.pollMs);
  const stopListening = deps.listenUrl ? listenOutbox(deps.listenUrl, drain, onError) : async () => {};
  drain();
  const stop = async () => {
    stopped = true;
    clearInterval(poll);
    await stopListening();
    await running;
  };
  return Object.assign(stop, { wake: drain });
}
