import type { Db } from '../db/pool.js';
import { deleteExpiredKeys, expireDueHolds } from '../db/orders-store.js';
import { rebalanceStockBuckets } from '../db/catalog-store.js';
import { prunePublishedOutbox, pruneProcessedEvents, pruneStockOperationKeys } from '../db/retention-store.js';
import { pruneEvents } from '../db/events-store.js';
import type { Metrics } from '../common/metrics.js';
import { every } from '../common/every.js';
import { advanceDrops } from '../db/drops-store.js';

export type SweeperOptions = {
  intervalMs: number;
  batchSize?: number;
  onError?: (err: unknown) => void;
  onOutboxWritten?: (skus?: string[]) => void | Promise<void>;
  /** how often the retention jobs run */
  retentionIntervalMs: number;
  retention: RetentionOptions;
};

/**
 * What the retention jobs keep: published outbox rows for `outboxHours`, processed events for `processedEventsDays`
 * (30+), the event log for `eventsDays` (EVENT_RETENTION_DAYS).
 */
export type RetentionOptions = { outboxHours: number; processedEventsDays: number; eventsDays?: number };

/**
 * Expires holds past `expires_at` in batches (SKIP LOCKED, so any number of sweepers may run) until none is due, then
 * evens out the stock buckets no claim holds (docs/capacity.md), and advances every drop that has not ended (its fair
 * start, draw, lapses, admissions and end: db/drops-store.ts). Returns the holds expired.
 * @example const n = await sweepOnce(db, metrics)
 */
export async function sweepOnce(
  db: Db,
  metrics: Metrics,
  batchSize = 100,
  onOutboxWritten: (skus?: string[]) => void | Promise<void> = () => {},
): Promise<number> {
  let total = 0;
  for (;;) {
    const expired = await expireDueHolds(db, batchSize);
    total += expired.length;
    metrics.reservationsExpired.inc(expired.length);
    if (expired.length) await onOutboxWritten();
    // Stop only on an empty batch: a short one may just mean another sweeper holds some candidates right now.
    if (expired.length === 0) break;
  }
  await rebalanceStockBuckets(db); // stock buckets evened out (the ones no claim holds right now)
  // after the expiries: the units they returned are what admissions hand out
  const drops = await advanceDrops(db);
  if (drops.drops > 0) await onOutboxWritten();
  return total;
}

/** Deletes idempotency keys past retention, in batches. */
export async function cleanupKeysOnce(db: Db, metrics: Metrics, batchSize = 1000): Promise<number> {
  let total = 0;
  for (;;) {
    const n = await deleteExpiredKeys(db, batchSize);
    total += n;
    metrics.idempotencyKeysDeleted.inc(n);
    if (n < batchSize) return total;
  }
}

/**
 * The retention jobs, once: finished idempotency keys, published outbox rows and old processed events, each in
 * batches until none is left. Returns how many rows of each it deleted.
 * @example await retentionOnce(db, metrics, { outboxHours: 24, processedEventsDays: 30 })
 */
export async function retentionOnce(db: Db, metrics: Metrics, retention: RetentionOptions, batchSize = 1000) {
  const drain = async (batch: () => Promise<number>) => {
    let total = 0;
    for (;;) {
      const n = await batch();
      total += n;
      if (n < batchSize) return total;
    }
  };
  const keys =
    (await cleanupKeysOnce(db, metrics, batchSize)) + (await drain(() => pruneStockOperationKeys(db, batchSize)));
  const outbox = await drain(() => prunePublishedOutbox(db, retention.outboxHours * 3600, batchSize));
  const processedEvents = await drain(() => pruneProcessedEvents(db, retention.processedEventsDays, batchSize));
  metrics.retentionDeleted.inc({ table: 'outbox' }, outbox);
  metrics.retentionDeleted.inc({ table: 'processed_events' }, processedEvents);
  // the event log (docs/events.md): EVENT_RETENTION_DAYS, 30 by default; its deliveries go with each event
  const events = await drain(() => pruneEvents(db, retention.eventsDays ?? 30, batchSize));
  metrics.retentionDeleted.inc({ table: 'events' }, events);
  return { keys, outbox, processedEvents, events };
}

/** The sweeper and the retention jobs as background loops of the Node host. Returns a stop function. */
export function startSweeper(db: Db, metrics: Metrics, opts: SweeperOptions) {
  const onError = opts.onError ?? (() => {});
  const stopSweep = every(opts.intervalMs, () => sweepOnce(db, metrics, opts.batchSize, opts.onOutboxWritten), onError);
  const stopCleanup = every(opts.retentionIntervalMs, () => retentionOnce(db, metrics, opts.retention), onError);
  return async () => {
    await Promise.all([stopSweep(), stopCleanup()]);
  };
}
