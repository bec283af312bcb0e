// Every SQL statement about payments: attempts and their outcomes (db/functions/040_payments.sql, 080_checkout.sql),
// the reconciler's, compensation worker's and capture worker's leases, and the reads of Order.payment.
import { z } from 'zod';
import type { Db } from './pool.js';
import { parseRow, parseRows } from './rows.js';
import { Order } from './order-document.js';

export type PaymentOutcome =
  | 'approved'
  | 'declined'
  | 'unknown'
  | 'not_found'
  | 'action_required'
  | 'cancelled'
  | 'refunded';
const OUTCOME_KINDS = [
  'refunded',
  'confirmed',
  'rejected',
  'declined_held',
  'held',
  'expired',
  'cancelled',
  'unknown',
  'action_required',
  'compensate',
  'noop',
] as const;
export type OutcomeKind = (typeof OUTCOME_KINDS)[number];

/** An answer without an order (`not_found`, `duplicate`) carries `order: null`, so every answer can be read alike. */
const NoOrder = z.null().default(null);

/** apply_payment_outcome()'s answer, and so complete_payment()'s and apply_payment_event()'s (which adds `duplicate`). */
const OutcomeAnswer = z.discriminatedUnion('kind', [
  z.object({ kind: z.enum(OUTCOME_KINDS), order: Order.nullable().default(null), reclaimed: z.boolean().optional() }),
  z.object({ kind: z.literal('duplicate'), order: NoOrder }),
]);
export type OutcomeRow = z.infer<typeof OutcomeAnswer>;

/** {type, clientSecret, redirectUrl}: what the shopper must do for the processor (payments/processor.ts NextAction). */
const NextActionRow = z.object({
  type: z.string(),
  clientSecret: z.string().nullable().default(null),
  redirectUrl: z.string().nullable().default(null),
});
export type NextActionRow = z.infer<typeof NextActionRow>;
/** How long an attempt may stay undecided (PAYMENT_MAX_PENDING_SECONDS) and wait for the shopper (PAYMENT_ACTION_TIMEOUT_SECONDS). */
export type AttemptBounds = { deadlineSeconds: number; maxPendingSeconds: number; actionTimeoutSeconds: number };
export type KeyRef = { clientId: string; customerId: string; key: string };

const BeginPaymentAnswer = z.object({ kind: z.enum(['awaiting', 'not_held']), order: Order });

/** HELD -> AWAITING_PAYMENT with a deadline and a PENDING payment row (begin_payment, db/functions/040_payments.sql). One statement. */
export async function beginPayment(
  db: Db,
  orderId: string,
  key: KeyRef,
  provider: string,
  bounds: AttemptBounds,
  token: string,
): Promise<z.infer<typeof BeginPaymentAnswer>> {
  const { rows } = await db.run(
    `SELECT begin_payment(p_order_id => $1::uuid, p_client_id => $2, p_customer_id => $3, p_key => $4, p_provider => $5,
                          p_deadline_seconds => $6, p_token => $7, p_max_pending_seconds => $8, p_action_timeout_seconds => $9) AS r`,
    [
      orderId,
      key.clientId,
      key.customerId,
      key.key,
      provider,
      bounds.deadlineSeconds,
      token,
      bounds.maxPendingSeconds,
      bounds.actionTimeoutSeconds,
    ],
  );
  return parseRow(BeginPaymentAnswer, rows[0]?.r, 'begin_payment()');
}

/** placeOrder's outcome step: guarded transition (I6) and the key row finished, in one statement. */
export async function completePayment(
  db: Db,
  orderId: string,
  key: KeyRef,
  outcome: PaymentOutcome,
  providerRef: string | null,
  reason: string | null,
  nextAction: NextActionRow | null = null,
): Promise<OutcomeRow> {
  const { rows } = await db.run(
    `SELECT complete_payment(p_order_id => $1::uuid, p_client_id => $2, p_customer_id => $3, p_key => $4, p_outcome => $5,
                             p_provider_ref => $6, p_reason => $7, p_next_action => $8::jsonb) AS r`,
    [
      orderId,
      key.clientId,
      key.customerId,
      key.key,
      outcome,
      providerRef,
      reason,
      nextAction ? JSON.stringify(nextAction) : null,
    ],
  );
  return parseRow(OutcomeAnswer, rows[0]?.r, 'complete_payment()');
}

/**
 * The guarded transition for one attempt (`key`; null: the order's latest): only the open attempt of an AWAITING_PAYMENT
 * order moves it; a success for anything else confirms a held order or records a compensation (apply_payment_outcome).
 */
export async function applyPaymentOutcome(
  db: Db,
  orderId: string,
  outcome: PaymentOutcome,
  providerRef: string | null,
  reason: string | null,
  key: string | null = null,
  nextAction: NextActionRow | null = null,
): Promise<OutcomeRow> {
  const { rows } = await db.run(
    `SELECT apply_payment_outcome(p_order_id => $1::uuid, p_outcome => $2, p_provider_ref => $3, p_reason => $4, p_key => $5,
                                  p_next_action => $6::jsonb) AS r`,
    [orderId, outcome, providerRef, reason, key, nextAction ? JSON.stringify(nextAction) : null],
  );
  return parseRow(OutcomeAnswer, rows[0]?.r, 'apply_payment_outcome()');
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
  key: string | null = null,
  nextAction: NextActionRow | null = null,
): Promise<OutcomeRow> {
  const { rows } = await db.run(
    `SELECT apply_payment_event(p_source => $1, p_event_id => $2, p_order_id => $3::uuid, p_outcome => $4, p_provider_ref => $5,
                                p_reason => $6, p_key => $7, p_next_action => $8::jsonb) AS r`,
    [source, eventId, orderId, outcome, providerRef, reason, key, nextAction ? JSON.stringify(nextAction) : null],
  );
  return parseRow(OutcomeAnswer, rows[0]?.r, 'apply_payment_event()');
}

const DuePaymentRow = z.object({
  order_id: z.string(),
  provider: z.string(),
  checks: z.number(),
  key: z.string(),
  provider_ref: z.string().nullable(),
  state: z.enum(['PENDING', 'UNKNOWN', 'ACTION_REQUIRED']),
  give_up: z.boolean(),
  token: z.string().nullable(),
  amount: z.number(),
  currency: z.string(),
  repeatable: z.boolean().nullable(),
});

function toDuePayment(r: z.infer<typeof DuePaymentRow>): DuePayment {
  return {
    orderId: r.order_id,
    provider: r.provider,
    checks: r.checks,
    key: r.key,
    providerRef: r.provider_ref,
    state: r.state,
    giveUp: r.give_up,
    repeat: r.token && r.repeatable ? { token: r.token, amount: r.amount, currency: r.currency.trim() } : null,
  };
}

export type DuePayment = {
  orderId: string;
  provider: string;
  checks: number;
  /** the attempt's processor key and payment id (null until the processor told us) */
  key: string;
  providerRef: string | null;
  state: 'PENDING' | 'UNKNOWN' | 'ACTION_REQUIRED';
  /** past PAYMENT_MAX_PENDING_SECONDS (or PAYMENT_ACTION_TIMEOUT_SECONDS while the shopper is asked): cancel, then release */
  giveUp: boolean;
  /** what a repeat of the authorization needs (the processor answers the same payment for the same key within 24 h) */
  repeat: { token: string; amount: number; currency: string } | null;
};

/**
 * Leases a batch of open payments past their deadline (next_check_at) for one reconciler: a short transaction that only
 * moves next_check_at forward, SKIP LOCKED so reconcilers never wait on each other. The lease decides nothing:
 * the transition after the lookup is guarded on the order row (I6).
 */
export async function claimDuePayments(db: Db, limit: number, leaseSeconds: number): Promise<DuePayment[]> {
  const { rows } = await db.run(
    `UPDATE payments p SET next_check_at = now() + make_interval(secs => $2), checks = p.checks + 1
       FROM (SELECT q.id FROM payments q JOIN orders o ON o.id = q.order_id
              WHERE q.state IN ('PENDING', 'UNKNOWN', 'ACTION_REQUIRED') AND q.next_check_at <= now() AND o.status = 'AWAITING_PAYMENT'
              ORDER BY q.next_check_at LIMIT $1
              FOR UPDATE OF q SKIP LOCKED) due
      WHERE p.id = due.id
     RETURNING p.order_id, p.provider, p.checks, coalesce(p.idem_key, p.order_id::text) AS key, p.provider_ref, p.state,
               coalesce(p.give_up_at <= now(), false) AS give_up, p.token, p.amount, p.currency,
               p.requested_at > now() - interval '23 hours' AS repeatable`,
    [limit, leaseSeconds],
  );
  return parseRows(DuePaymentRow, rows, 'the due payments').map(toDuePayment);
}

/** The processor says "pending": ask again after `delaySeconds` (backoff computed by the caller), never later than the give-up time. */
export async function scheduleNextCheck(db: Db, orderId: string, delaySeconds: number): Promise<void> {
  await db.run(
    `UPDATE payments SET next_check_at = least(now() + make_interval(secs => $2), greatest(give_up_at, now() + interval '1 second'))
      WHERE order_id = $1::uuid AND state IN ('PENDING', 'UNKNOWN', 'ACTION_REQUIRED')`,
    [orderId, delaySeconds],
  );
}

/** The payment id as soon as the processor names it (an unknown outcome that still told us the id): found by identity later. */
export async function notePaymentRef(db: Db, key: string, providerRef: string): Promise<void> {
  await db.run(`UPDATE payments SET provider_ref = $2 WHERE idem_key = $1 AND provider_ref IS NULL`, [
    key,
    providerRef,
  ]);
}

export type PendingCompensation = {
  id: number;
  orderId: string;
  provider: string;
  providerRef: string | null;
  key: string;
};
const CompensationRow = z.object({
  id: z.number(),
  order_id: z.string(),
  provider: z.string(),
  provider_ref: z.string().nullable(),
  key: z.string(),
});
const toCompensation = (r: z.infer<typeof CompensationRow>): PendingCompensation => ({
  id: r.id,
  orderId: r.order_id,
  provider: r.provider,
  providerRef: r.provider_ref,
  key: r.key,
});

/** Leases pending compensations (SKIP LOCKED, short transaction); the void happens outside, then markCompensated. */
export async function claimCompensations(db: Db, limit: number, leaseSeconds: number): Promise<PendingCompensation[]> {
  const { rows } = await db.run(
    `UPDATE compensations c SET lease_until = now() + make_interval(secs => $2), attempts = c.attempts + 1
       FROM (SELECT id FROM compensations
              WHERE state = 'PENDING' AND (lease_until IS NULL OR lease_until < now())
              ORDER BY id LIMIT $1 FOR UPDATE SKIP LOCKED) due
      WHERE c.id = due.id
     RETURNING c.id, c.order_id, c.provider, c.provider_ref, coalesce(c.payment_key, c.order_id::text) AS key`,
    [limit, leaseSeconds],
  );
  return parseRows(CompensationRow, rows, 'the pending compensations').map(toCompensation);
}

/** The void went through: done, once (guarded on PENDING). */
export async function markCompensated(db: Db, id: number): Promise<boolean> {
  const { rowCount } = await db.run(
    `UPDATE compensations SET state = 'DONE', done_at = now(), lease_until = NULL WHERE id = $1 AND state = 'PENDING'`,
    [id],
  );
  return (rowCount ?? 0) > 0;
}

/** The void failed: keep it pending, note why; the lease lapses and another pass retries. */
export async function noteCompensationError(db: Db, id: number, error: string): Promise<void> {
  await db.run(`UPDATE compensations SET last_error = $2 WHERE id = $1 AND state = 'PENDING'`, [
    id,
    error.slice(0, 500),
  ]);
}

const BeginOrderPaymentAnswer = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('awaiting'), key: z.string(), attempt: z.number(), order: Order }),
  z.object({ kind: z.enum(['in_flight', 'confirmed', 'expired', 'final']), order: Order }),
  z.object({ kind: z.literal('not_found'), order: NoOrder }),
]);
export type BeginOrderPaymentRow = z.infer<typeof BeginOrderPaymentAnswer>;

/** payOrder's first step (begin_order_payment, db/functions/080_checkout.sql): a new attempt on a live hold, or why not. */
export async function beginOrderPayment(
  db: Db,
  clientId: string,
  orderId: string,
  provider: string,
  token: string,
  bounds: AttemptBounds,
): Promise<BeginOrderPaymentRow> {
  const { rows } = await db.run(
    `SELECT begin_order_payment(p_client_id => $1, p_order_id => $2::uuid, p_provider => $3, p_token => $4,
                                p_deadline_seconds => $5, p_max_pending_seconds => $6, p_action_timeout_seconds => $7) AS r`,
    [clientId, orderId, provider, token, bounds.deadlineSeconds, bounds.maxPendingSeconds, bounds.actionTimeoutSeconds],
  );
  return parseRow(BeginOrderPaymentAnswer, rows[0]?.r, 'begin_order_payment()');
}

const ConfirmOrderAnswer = z.discriminatedUnion('kind', [
  z.object({ kind: z.enum(['confirmed', 'replayed', 'refund_due', 'already_final', 'in_flight']), order: Order }),
  z.object({ kind: z.literal('not_found'), order: NoOrder }),
]);
export type ConfirmOrderRow = z.infer<typeof ConfirmOrderAnswer>;

/** confirmOrder as one statement (confirm_order, db/functions/080_checkout.sql). */
export async function confirmOrder(
  db: Db,
  clientId: string | null,
  orderId: string,
  reference: string,
): Promise<ConfirmOrderRow> {
  const { rows } = await db.run(
    'SELECT confirm_order(p_client_id => $1, p_order_id => $2::uuid, p_reference => $3) AS r',
    [clientId, orderId, reference],
  );
  return parseRow(ConfirmOrderAnswer, rows[0]?.r, 'confirm_order()');
}

const PAYMENT_STATES = [
  'PENDING',
  'UNKNOWN',
  'ACTION_REQUIRED',
  'AUTHORIZED',
  'DECLINED',
  'NOT_FOUND',
  'CANCELLED',
  'EXTERNAL',
] as const;
export type PaymentStateName = (typeof PAYMENT_STATES)[number];
const CAPTURE_STATES = ['NONE', 'PENDING', 'CAPTURED', 'EXTERNAL', 'FAILED'] as const;
export type CaptureStateName = (typeof CAPTURE_STATES)[number];
export type PaymentView = {
  state: PaymentStateName;
  provider: string;
  reference: string | null;
  nextAction: NextActionRow | null;
  captureState: CaptureStateName;
};
const PaymentRow = z.object({
  state: z.enum(PAYMENT_STATES),
  provider: z.string(),
  provider_ref: z.string().nullable(),
  next_action: NextActionRow.nullable(),
  capture_state: z.enum(CAPTURE_STATES),
});
const toPaymentView = (r: z.infer<typeof PaymentRow>): PaymentView => ({
  state: r.state,
  provider: r.provider,
  reference: r.provider_ref,
  nextAction: r.next_action,
  captureState: r.capture_state,
});

/** The latest payment attempt of one of the client's orders, as Order.payment shows it. */
export async function latestPayment(db: Db, clientId: string | null, orderId: string): Promise<PaymentView | null> {
  const { rows } = await db.query(
    `SELECT p.state, p.provider, p.provider_ref, p.next_action, p.capture_state
       FROM payments p JOIN orders o ON o.id = p.order_id
      WHERE p.order_id = $1::uuid AND ($2::text IS NULL OR o.client_id = $2)
      ORDER BY p.attempt DESC LIMIT 1`,
    [orderId, clientId],
  );
  return rows[0] ? toPaymentView(parseRow(PaymentRow, rows[0], 'the latest payment')) : null;
}

export type DueCapture = { id: string; orderId: string; key: string; providerRef: string | null; attempts: number };
const CaptureRow = z.object({
  id: z.string(),
  order_id: z.string(),
  key: z.string(),
  provider_ref: z.string().nullable(),
  capture_attempts: z.number(),
});
const toDueCapture = (r: z.infer<typeof CaptureRow>): DueCapture => ({
  id: r.id,
  orderId: r.order_id,
  key: r.key,
  providerRef: r.provider_ref,
  attempts: r.capture_attempts,
});

/**
 * Leases confirmed payments to capture (SKIP LOCKED, short transaction), counting an attempt each; `orderId`: only that
 * order's (captureOrder, which also takes a capture that FAILED back to PENDING for one more try).
 */
export async function claimCaptures(
  db: Db,
  limit: number,
  leaseSeconds: number,
  orderId: string | null,
): Promise<DueCapture[]> {
  const { rows } = await db.run(
    `UPDATE payments p SET capture_lease_until = now() + make_interval(secs => $2), capture_attempts = p.capture_attempts + 1,
                           capture_state = 'PENDING'
       FROM (SELECT q.id FROM payments q JOIN orders o ON o.id = q.order_id
              WHERE (q.capture_state = 'PENDING' OR ($3::uuid IS NOT NULL AND q.capture_state = 'FAILED')) AND o.status = 'CONFIRMED'
                AND (q.capture_lease_until IS NULL OR q.capture_lease_until < now())
                AND ($3::uuid IS NULL OR q.order_id = $3::uuid)
              ORDER BY q.id LIMIT $1 FOR UPDATE OF q SKIP LOCKED) due
      WHERE p.id = due.id
     RETURNING p.id, p.order_id, coalesce(p.idem_key, p.order_id::text) AS key, p.provider_ref, p.capture_attempts`,
    [limit, leaseSeconds, orderId],
  );
  return parseRows(CaptureRow, rows, 'the due captures').map(toDueCapture);
}

/** The capture went through: recorded once (guarded on PENDING; a cancelled order's payment is no longer PENDING). */
export async function markCaptured(db: Db, id: string): Promise<boolean> {
  const { rowCount } = await db.run(
    `UPDATE payments SET capture_state = 'CAPTURED', captured_at = now(), capture_lease_until = NULL, capture_error = NULL
      WHERE id = $1::uuid AND capture_state = 'PENDING'`,
    [id],
  );
  return (rowCount ?? 0) > 0;
}

const CaptureFailedRow = z.object({ s: z.enum(['PENDING', 'FAILED']).nullable() });

/**
 * A capture attempt failed (note_capture_failed, db/functions/050_capture.sql): tried again after a backoff, or FAILED
 * once it had `maxAttempts`. Returns the capture state after it (null: it was no longer PENDING).
 */
export async function noteCaptureFailed(
  db: Db,
  id: string,
  error: string,
  maxAttempts: number,
  retrySeconds: number,
): Promise<'PENDING' | 'FAILED' | null> {
  const { rows } = await db.run(
    'SELECT note_capture_failed(p_id => $1::uuid, p_error => $2, p_max_attempts => $3, p_retry_seconds => $4) AS s',
    [id, error, maxAttempts, retrySeconds],
  );
  return parseRow(CaptureFailedRow, rows[0], 'note_capture_failed()').s;
}

const CancelOrderAnswer = z.discriminatedUnion('kind', [
  z.object({ kind: z.enum(['cancelled', 'already_cancelled', 'not_confirmed']), order: Order }),
  z.object({ kind: z.literal('not_found'), order: NoOrder }),
]);
export type CancelOrderRow = z.infer<typeof CancelOrderAnswer>;

/** cancelOrder as one statement (cancel_confirmed_order, db/functions/080_checkout.sql). */
export async function cancelConfirmedOrder(
  db: Db,
  orderId: string,
  restock: boolean,
  reason: string | null,
): Promise<CancelOrderRow> {
  const { rows } = await db.run(
    'SELECT cancel_confirmed_order(p_order_id => $1::uuid, p_restock => $2, p_reason => $3) AS r',
    [orderId, restock, reason],
  );
  return parseRow(CancelOrderAnswer, rows[0]?.r, 'cancel_confirmed_order()');
}

const CaptureStateRow = z.object({ capture_state: z.string() });

/** The capture state of an order's confirmed payment (captureOrder's answer), null when it has none. */
export async function captureStateOf(db: Db, orderId: string): Promise<string | null> {
  const { rows } = await db.query(
    `SELECT capture_state FROM payments WHERE order_id = $1::uuid AND state IN ('AUTHORIZED', 'EXTERNAL') ORDER BY attempt DESC LIMIT 1`,
    [orderId],
  );
  return rows[0] ? parseRow(CaptureStateRow, rows[0], 'the capture state').capture_state : null;
}

const OrderIdRow = z.object({ order_id: z.string() });

/** The order a processor payment id belongs to (events that name only the payment, e.g. Stripe's charge.refunded). */
export async function orderIdByProviderRef(db: Db, providerRef: string): Promise<string | null> {
  const { rows } = await db.query(
    `SELECT order_id FROM payments WHERE provider_ref = $1 ORDER BY attempt DESC LIMIT 1`,
    [providerRef],
  );
  return rows[0] ? parseRow(OrderIdRow, rows[0], 'the order of a payment').order_id : null;
}
