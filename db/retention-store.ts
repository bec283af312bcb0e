// Retention: rows whose work is done, deleted in batches (FOR UPDATE SKIP LOCKED, so sweepers never wait on each other).
import type { Db } from './pool.js';

/** Outbox rows the relay published more than `olderThanSeconds` ago (nothing reads a published row again). */
export async function prunePublishedOutbox(db: Db, olderThanSeconds: number, limit: number): Promise<number> {
  const { rowCount } = await db.run(
    `DELETE FROM outbox WHERE id IN (
       SELECT id FROM outbox WHERE published_at IS NOT NULL AND published_at < now() - make_interval(secs => $1)
        LIMIT $2 FOR UPDATE SKIP LOCKED)`,
    [olderThanSeconds, limit],
  );
  return rowCount ?? 0;
}

/** Stock operations' idempotency keys past their retention (IDEMPOTENCY_RETENTION_HOURS). */
export async function pruneStockOperationKeys(db: Db, limit: number): Promise<number> {
  const { rowCount } = await db.run(
    `DELETE FROM stock_operation_keys WHERE (client_id, key) IN (
       SELECT client_id, key FROM stock_operation_keys WHERE expires_at < now() LIMIT $1 FOR UPDATE SKIP LOCKED)`,
    [limit],
  );
  return rowCount ?? 0;
}

/**
 * Processed webhook events (payments, marketplaces) older than `olderThanDays`: a redelivery after that would be
 * applied again, so the configuration keeps at least 30 days (processors retry for up to 3 days).
 */
export async function pruneProcessedEvents(db: Db, olderThanDays: number, limit: number): Promise<number> {
  const { rowCount } = await db.run(
    `DELETE FROM processed_events WHERE (source, event_id) IN (
       SELECT source, event_id FROM processed_events WHERE processed_at < now() - make_interval(days => $1)
        LIMIT $2 FOR UPDATE SKIP LOCKED)`,
    [olderThanDays, limit],
  );
  return rowCount ?? 0;
}
