import type { Db } from './pool.js';
import { toOrder, type OrderRecord } from './orders-store.js';

export type PaymentOutcome = 'approved' | 'declined' | 'unknown' | 'not_found';
export type OutcomeRow =
  | { kind: 'confirmed' | 'rejected' | 'expired' | 'unknown' | 'compensate' | 'noop'; order: OrderRecord | null }
  | { kind: 'duplicate'; order?: undefined };
export type KeyRef = { clientId: string; customerId: string; key: string };

function parse(r: any): any {
  if (r.order) r.order = toOrder(r.order);
  else r.order = null;
  return r;
}

/** HELD -> AWAITING_PAYMENT with a deadline and a PENDING payment row (begin_payment, db/functions/040_payments.sql). One statement. */
export async function beginPayment(
  db: Db,
  orderId: string,
  key: KeyRef,
  provider: string,
  deadlineSeconds: number,
): Promise<{ kind: 'awaiting' | 'not_held'; order: OrderRecord }> {
  const { rows } = await db.run<{ r: any }>('SELECT begin_payment($1::uuid, $2, $3, $4, $5, $6) AS r', [
    orderId, key.clientId, key.customerId, key.key, provider, deadlineSeconds,
  ]);
  return parse(rows[0]!.r);
}

/** placeOrder's outcome step: guarded transition (I6) and the key row finished, in one statement. */
export async function completePayment(
  db: Db,
  orderId: string,
  key: KeyRef,
  outcome: PaymentOutcome,
  providerRef: string | null,
  reason: string | null,
): Promise<OutcomeRow> {
  const { rows } = await db.run<{ r: any }>('SELECT complete_payment($1::uuid, $2, $3, $4, $5, $6, $7) AS r', [
    orderId, key.clientId, key.customerId, key.key, outcome, providerRef, reason,
  ]);
  return parse(rows[0]!.r);
}

/** The reconciler's (and tests') transition: guarded on AWAITING_PAYMENT; a lost success records a compensation. */
export async function applyPaymentOutcome(
  db: Db,
  orderId: string,
  outcome: PaymentOutcome,
  providerRef: string | null,
  reason: string | null,
): Promise<OutcomeRow> {
  const { rows } = await db.run<{ r: any }>('SELECT apply_payment_outcome($1::uuid, $2, $3, $4) AS r', [orderId, outcome, providerRef, reason]);
  return parse(rows[0]!.r);
}

/** A webhook: event id and effect in one transaction (I8); `duplicate` when the id was already processed. */
export async function applyPaymentEvent(
  db: Db,
  source: string,
  eventId: string,
  orderId: string,
  outcome: PaymentOutcome,
  providerRef: string | null,
  reason: string | null,
): Promise<OutcomeRow> {
  const { rows } = await db.run<{ r: any }>('SELECT apply_payment_event($1, $2, $3::uuid, $4, $5, $6) AS r', [
    source, eventId, orderId, outcome, providerRef, reason,
  ]);
  return parse(rows[0]!.r);
}

export type DuePayment = { orderId: string; provider: string; checks: number };

/**
 * Leases a batch of open payments past their deadline (next_check_at) for one reconciler: a short transaction that only
 * moves next_check_at forward, SKIP LOCKED so reconcilers never wait on each other. The lease decides nothing:
 * the transition after the lookup is guarded on the order row (I6).
 */
export async function claimDuePayments(db: Db, limit: number, leaseSeconds: number): Promise<DuePayment[]> {
  const { rows } = await db.run<{ order_id: string; provider: string; checks: number }>(
    `UPDATE payments p SET next_check_at = now() + make_interval(secs => $2), checks = p.checks + 1
       FROM (SELECT q.id FROM payments q JOIN orders o ON o.id = q.order_id
              WHERE q.state IN ('PENDING', 'UNKNOWN') AND q.next_check_at <= now() AND o.status = 'AWAITING_PAYMENT'
              ORDER BY q.next_check_at LIMIT $1
              FOR UPDATE OF q SKIP LOCKED) due
      WHERE p.id = due.id
     RETURNING p.order_id, p.provider, p.checks`,
    [limit, leaseSeconds],
  );
  return rows.map((r) => ({ orderId: r.order_id, provider: r.provider, checks: r.checks }));
}

/** The processor says "pending": ask again after `delaySeconds` (backoff computed by the caller). */
export async function scheduleNextCheck(db: Db, orderId: string, delaySeconds: number): Promise<void> {
  await db.run(
    `UPDATE payments SET next_check_at = now() + make_interval(secs => $2)
      WHERE order_id = $1::uuid AND state IN ('PENDING', 'UNKNOWN')`,
    [orderId, delaySeconds],
  );
}

export type PendingCompensation = { id: number; orderId: string; provider: string; providerRef: string | null };

/** Leases pending compensations (SKIP LOCKED, short transaction); the void happens outside, then markCompensated. */
export async function claimCompensations(db: Db, limit: number, leaseSeconds: number): Promise<PendingCompensation[]> {
  const { rows } = await db.run<{ id: number; order_id: string; provider: string; provider_ref: string | null }>(
    `UPDATE compensations c SET lease_until = now() + make_interval(secs => $2), attempts = c.attempts + 1
       FROM (SELECT id FROM compensations
              WHERE state = 'PENDING' AND (lease_until IS NULL OR lease_until < now())
              ORDER BY id LIMIT $1 FOR UPDATE SKIP LOCKED) due
      WHERE c.id = due.id
     RETURNING c.id, c.order_id, c.provider, c.provider_ref`,
    [limit, leaseSeconds],
  );
  return rows.map((r) => ({ id: Number(r.id), orderId: r.order_id, provider: r.provider, providerRef: r.provider_ref }));
}

/** The void went through: done, once (guarded on PENDING). */
export async function markCompensated(db: Db, id: number): Promise<boolean> {
  const { rowCount } = await db.run(`UPDATE compensations SET state = 'DONE', done_at = now(), lease_until = NULL WHERE id = $1 AND state = 'PENDING'`, [id]);
  return (rowCount ?? 0) > 0;
}

/** The void failed: keep it pending, note why; the lease lapses and another pass retries. */
export async function noteCompensationError(db: Db, id: number, error: string): Promise<void> {
  await db.run(`UPDATE compensations SET last_error = $2 WHERE id = $1 AND state = 'PENDING'`, [id, error.slice(0, 500)]);
}
