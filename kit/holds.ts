// Time travel for tests: moves the clocks the timers read (hold expiry, payment checks, key retention) into the past,
// so the sweeper, the reconciler or the key cleanup acts now. Test tooling, so its SQL lives here rather than in db/.
import type { Queryable } from '../db/pool.js';

/** Which rows: those of these orders, or those on these SKUs (an order line's SKU for payments). */
export type Target = ({ orderIds: string[]; skus?: never } | { skus: string[]; orderIds?: never }) & {
  /** how far in the past (default 1 s) */
  seconds?: number;
  /** payments only: also past the window (24 h) in which the reconciler repeats a timed-out authorization to find it */
  pastRepeatWindow?: boolean;
  /** payments only: also past PAYMENT_MAX_PENDING_SECONDS / PAYMENT_ACTION_TIMEOUT_SECONDS (the reconciler cancels) */
  pastGiveUp?: boolean;
};

const past = (t: Target) => t.seconds ?? 1;

/**
 * Puts the reservations' expires_at `seconds` in the past, whatever their state: the sweeper must take only HELD ones
 * (an AWAITING_PAYMENT hold past its expiry is how the I7 tests prove it does not).
 * @example await makeHoldsOverdue(t.db, { orderIds: [order.id] })
 */
export async function makeHoldsOverdue(db: Queryable, target: Target): Promise<number> {
  const r =
    'orderIds' in target && target.orderIds
      ? await db.query(
          `UPDATE reservations SET expires_at = now() - make_interval(secs => $2) WHERE order_id = ANY ($1::uuid[])`,
          [target.orderIds, past(target)],
        )
      : await db.query(
          `UPDATE reservations SET expires_at = now() - make_interval(secs => $2) WHERE sku = ANY ($1::text[])`,
          [target.skus, past(target)],
        );
  return r.rowCount ?? 0;
}

/**
 * Puts the payments' next check (and their deadline) `seconds` in the past, so the reconciler leases them now; it
 * leases only open ones (PENDING, UNKNOWN) of AWAITING_PAYMENT orders.
 * @example await makePaymentsDue(t.db, { orderIds: [id] })
 */
export async function makePaymentsDue(db: Queryable, target: Target): Promise<number> {
  const set =
    `UPDATE payments SET next_check_at = now() - make_interval(secs => $2), deadline_at = now() - make_interval(secs => $2)` +
    (target.pastRepeatWindow ? `, requested_at = now() - interval '24 hours'` : '') +
    (target.pastGiveUp
      ? `, give_up_at = now() - make_interval(secs => $2), action_give_up_at = now() - make_interval(secs => $2)`
      : '');
  const r =
    'orderIds' in target && target.orderIds
      ? await db.query(`${set} WHERE order_id = ANY ($1::uuid[])`, [target.orderIds, past(target)])
      : await db.query(`${set} WHERE order_id IN (SELECT order_id FROM order_lines WHERE sku = ANY ($1::text[]))`, [
          target.skus,
          past(target),
        ]);
  return r.rowCount ?? 0;
}

/**
 * Puts these idempotency keys' retention end `seconds` in the past, so the key cleanup deletes them now.
 * @example await makeKeysOverdue(t.db, ['old-key'])
 */
export async function makeKeysOverdue(db: Queryable, keys: string[], seconds = 1): Promise<number> {
  const r = await db.query(
    `UPDATE idempotency_keys SET expires_at = now() - make_interval(secs => $2) WHERE key = ANY ($1::text[])`,
    [keys, seconds],
  );
  return r.rowCount ?? 0;
}
