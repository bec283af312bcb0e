import type { Db } from '../db/pool.js';
import { deleteExpiredKeys, expireDueHolds } from '../db/orders-store.js';
import type { Metrics } from '../common/metrics.js';
import { every } from '../common/every.js';

export type SweeperOptions = { intervalMs: number; batchSize?: number; onError?: (err: unknown) => void; onOutboxWritten?: (skus?: string[]) => void | Promise<void> };

/**
 * Expires holds past `expires_at` in batches (SKIP LOCKED, so any number of sweepers may run) until none is due.
 * @example const n = await sweepOnce(db, metrics)
 */
export async function sweepOnce(db: Db, metrics: Metrics, batchSize = 100, onOutboxWritten: (skus?: string[]) => void | Promise<void> = () => {}): Promise<number> {
  let total = 0;
  for (;;) {
    const expired = await expireDueHolds(db, batchSize);
    total += expired.length;
    metrics.reservationsExpired.inc(expired.length);
    if (expired.length) await onOutboxWritten();
    // Stop only on an empty batch: a short one may just mean another sweeper holds some candidates right now.
    if (expired.length === 0) return total;
  }
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

/** The sweeper and the key cleanup as background loops of the Node host. Returns a stop function. */
export function startSweeper(db: Db, metrics: Metrics, opts: SweeperOptions) {
  const onError = opts.onError ?? (() => {});
  const stopSweep = every(opts.intervalMs, () => sweepOnce(db, metrics, opts.batchSize, opts.onOutboxWritten), onError);
  const stopCleanup = every(Math.max(opts.intervalMs, 60_000), () => cleanupKeysOnce(db, metrics), onError);
  return async () => {
    await Promise.all([stopSweep(), stopCleanup()]);
  };
}
