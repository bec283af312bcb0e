// payOrder: pay for a held (RESERVED) order later, the same HELD -> AWAITING_PAYMENT -> SOLD path as placeOrder's.
import type { Db } from '../db/pool.js';
import type { OrderRecord } from '../db/orders-store.js';
import * as store from '../db/payments-store.js';
import type { AfterCommit } from '../common/after-commit.js';
import type { Metrics } from '../common/metrics.js';
import type { Caller } from '../common/caller.js';
import { refuse, type DomainError } from './errors.js';
import { isUuid, validatePayment, type PaymentInput } from './rules.js';
import { attemptBounds, authorizeAttempt, type PaymentDeps } from './payment-step.js';
import { mayActOn } from './get-order.js';

/** `token`: the order's token, which a public key must present (without it: NOT_FOUND, nothing changes). */
export type PayOrderInput = { orderId: string; token?: string | null; payment: PaymentInput };
export type PayOrderResult =
  | { ok: true; order: OrderRecord }
  | { ok: false; errors: DomainError[]; order: OrderRecord | null };
export type PayOrderDeps = {
  db: Db;
  metrics: Metrics;
  payments?: Omit<PaymentDeps, 'db' | 'metrics'>;
  onOutboxWritten: AfterCommit;
};

/**
 * The payOrder use case. One attempt at a time per order (the order row decides: a second call while one runs answers
 * PAYMENT_IN_FLIGHT and never authorizes); each attempt has its own processor key, so another card after a decline is
 * a new payment, and a retry of the same attempt never is. A decline puts the hold back to HELD until its expiresAt.
 * @example await payOrder(deps, { clientId: 'shop' }, { orderId, payment: { provider: 'sandbox', token } })
 */
export async function payOrder(
  deps: PayOrderDeps,
  caller: Pick<Caller, 'clientId'> & Partial<Caller>,
  input: PayOrderInput,
): Promise<PayOrderResult> {
  const { db, metrics, onOutboxWritten } = deps;
  const fail = (errors: DomainError[], order: OrderRecord | null = null): PayOrderResult => ({
    ok: false,
    errors,
    order,
  });
  if (!(await mayActOn(deps, caller, input.orderId, input.token)))
    return fail([refuse('NOT_FOUND', 'no such order', ['orderId'])]);
  const invalid = validatePayment(input.payment, deps.payments?.processor.name ?? null);
  if (invalid.length) return fail(invalid);
  if (!isUuid(input.orderId)) return fail([refuse('NOT_FOUND', 'no such order', ['orderId'])]);
  const payments = deps.payments!;
  const begun = await store.beginOrderPayment(
    db,
    caller.clientId,
    input.orderId,
    payments.processor.name,
    input.payment.token,
    attemptBounds(payments.settings),
  );
  switch (begun.kind) {
    case 'not_found':
      return fail([refuse('NOT_FOUND', 'no such order', ['orderId'])]);
    case 'in_flight':
      return fail(
        [
          refuse('PAYMENT_IN_FLIGHT', 'a payment for this order is already in flight; wait for its outcome', [
            'orderId',
          ]),
        ],
        begun.order,
      );
    case 'confirmed':
      return fail([refuse('ALREADY_FINAL', 'the order is already paid', ['orderId'])], begun.order);
    case 'final':
      return fail(
        [refuse('ALREADY_FINAL', `the order is ${begun.order.status}; nothing to pay`, ['orderId'])],
        begun.order,
      );
    case 'expired':
      await onOutboxWritten(begun.order.lines.map((l) => l.sku)); // the units went back
      return fail(
        [refuse('RESERVATION_EXPIRED', 'the hold expired before the payment could start', ['orderId'])],
        begun.order,
      );
  }
  await onOutboxWritten(); // AWAITING_PAYMENT announced
  const order = begun.order;
  let outcome = 'unknown';
  const done = await authorizeAttempt(
    { db, metrics, ...payments },
    {
      orderId: order.id,
      key: begun.key,
      amount: order.totalAmount,
      currency: order.currency,
      token: input.payment.token,
    },
    (r) => {
      outcome = r.outcome;
      return store.applyPaymentOutcome(
        db,
        order.id,
        r.outcome,
        r.providerRef ?? null,
        r.reason ?? null,
        begun.key,
        r.nextAction ?? null,
      );
    },
  );
  const now = done.order ?? order;
  if (done.kind !== 'unknown' && done.kind !== 'action_required' && done.kind !== 'noop') await onOutboxWritten();
  // the processor's webhook may have applied the same decline first (then ours is a no-op): the answer is the decline
  if (done.kind === 'declined_held' || (outcome === 'declined' && now.status === 'RESERVED'))
    return fail(
      [
        refuse(
          'PAYMENT_DECLINED',
          'the payment was declined; the units stay held until reservation.expiresAt: try another payment method',
          ['payment'],
        ),
      ],
      now,
    );
  return { ok: true, order: now };
}
