import type { Db } from '../db/pool.js';
import type { OrderRecord } from '../db/orders-store.js';
import * as store from '../db/payments-store.js';
import type { AuthorizeResult, Processor } from '../payments/processor.js';
import type { Metrics } from '../common/metrics.js';

export type PaymentSettings = {
  /** how long an AWAITING_PAYMENT order waits for a webhook before the reconciler asks the processor */
  deadlineSeconds: number;
  /** a key PROCESSING for longer than this belongs to a dead request: retries replay the order instead of waiting */
  recoverySeconds: number;
  /** PAYMENT_MAX_PENDING_SECONDS: an attempt still undecided after this is cancelled at the processor, then released */
  maxPendingSeconds: number;
  /** PAYMENT_ACTION_TIMEOUT_SECONDS: the same bound while the shopper is asked to act (3-D Secure) */
  actionTimeoutSeconds: number;
  /** test-only fault injection: sleep between the hold and the authorization (0: none) */
  pauseBeforeAuthorizeMs: number;
};
export type PaymentDeps = { db: Db; metrics: Metrics; processor: Processor; settings: PaymentSettings };

/** The bounds every new attempt is stored with. */
export const attemptBounds = (s: PaymentSettings): store.AttemptBounds => ({
  deadlineSeconds: s.deadlineSeconds,
  maxPendingSeconds: s.maxPendingSeconds,
  actionTimeoutSeconds: s.actionTimeoutSeconds,
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Authorizes one attempt OUTSIDE any transaction (its row is already AWAITING_PAYMENT + PENDING), then records the
 * outcome with `finish` (one short transaction, guarded). A fault keeps the hold (unknown) and is rethrown.
 */
export async function authorizeAttempt(
  deps: PaymentDeps,
  req: { orderId: string; key: string; amount: number; currency: string; token: string },
  finish: (r: AuthorizeResult) => Promise<store.OutcomeRow>,
): Promise<store.OutcomeRow> {
  const { metrics, processor, settings } = deps;
  if (settings.pauseBeforeAuthorizeMs) await sleep(settings.pauseBeforeAuthorizeMs);
  let result: AuthorizeResult;
  try {
    result = await processor.authorize(req);
  } catch (err) {
    // A fault (e.g. an idempotency conflict): the outcome is unknown, so the hold stays for the reconciler; then surface it.
    metrics.paymentAuthorizations.inc({ outcome: 'fault' });
    await finish({ outcome: 'unknown', reason: 'processor_fault' });
    throw err;
  }
  metrics.paymentAuthorizations.inc({ outcome: result.outcome });
  if (result.outcome === 'unknown') metrics.paymentUnknownOutcomes.inc({ reason: result.reason ?? 'unknown' });
  const done = await finish(result);
  if (done.kind === 'compensate') metrics.paymentCompensations.inc({ event: 'recorded' });
  return done;
}

/**
 * docs/architecture.md "The life of an order" step 3, after the hold committed (place_order left the key row PROCESSING):
 *   1. one short transaction: HELD -> AWAITING_PAYMENT while the hold is live, payment row PENDING (begin_payment);
 *   2. authorize with the order id as idempotency key, OUTSIDE any transaction, bounded by the processor's timeout;
 *   3. one short transaction: the outcome by guarded transition and the key row finished (complete_payment).
 * A crash after 1 leaves AWAITING_PAYMENT + PENDING: the reconciler asks the processor after the deadline (I7).
 * A crash before 1 leaves a HELD hold: the sweeper expires it; it was never sent to the processor.
 */
export async function payForOrder(
  deps: PaymentDeps,
  order: OrderRecord,
  key: store.KeyRef,
  token: string,
): Promise<OrderRecord> {
  const { db, processor, settings } = deps;
  const begun = await store.beginPayment(db, order.id, key, processor.name, attemptBounds(settings), token);
  if (begun.kind === 'not_held') return begun.order;
  const done = await authorizeAttempt(
    deps,
    { orderId: order.id, key: order.id, amount: order.totalAmount, currency: order.currency, token },
    (r) =>
      store.completePayment(
        db,
        order.id,
        key,
        r.outcome,
        r.providerRef ?? null,
        r.reason ?? null,
        r.nextAction ?? null,
      ),
  );
  return done.order ?? begun.order;
}
