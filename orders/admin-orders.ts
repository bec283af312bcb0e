// Admin operations on confirmed orders: capture the money (PAYMENT_CAPTURE=manual) and cancel (refund once, restock).
import type { Db } from '../db/pool.js';
import * as orders from '../db/orders-store.js';
import type { OrderRecord } from '../db/orders-store.js';
import * as store from '../db/payments-store.js';
import type { AfterCommit } from '../common/after-commit.js';
import type { Metrics } from '../common/metrics.js';
import type { Processor } from '../payments/processor.js';
import { refuse, type DomainError } from './errors.js';
import { isUuid } from './rules.js';
import { captureOnce } from './capture.js';

export type CancelOrderInput = { orderId: string; restock?: boolean | null; reason?: string | null };
export type AdminOrderResult =
  | { ok: true; order: OrderRecord }
  | { ok: false; errors: DomainError[]; order: OrderRecord | null };

const MAX_REASON_LENGTH = 500;
const notFound = (): AdminOrderResult => ({
  ok: false,
  order: null,
  errors: [refuse('NOT_FOUND', 'no such order', ['orderId'])],
});

export type AdminOrderDeps = { db: Db; metrics: Metrics; processor?: Processor; onOutboxWritten: AfterCommit };

/**
 * captureOrder: the order's confirmed payment captured at the processor OUTSIDE any transaction and recorded once
 * (the same lease and guarded write as the capture worker).
 * @example await captureOrder(deps, { orderId })
 */
export async function captureOrder(deps: AdminOrderDeps, input: { orderId: string }): Promise<AdminOrderResult> {
  const { db } = deps;
  if (!isUuid(input.orderId)) return notFound();
  const order = await orders.findAnyOrder(db, input.orderId);
  if (!order) return notFound();
  if (order.status !== 'CONFIRMED')
    return {
      ok: false,
      order,
      errors: [refuse('ALREADY_FINAL', `the order is ${order.status}: nothing to capture`, ['orderId'])],
    };
  if (deps.processor) await captureOnce({ ...deps, processor: deps.processor }, { orderId: order.id, batchSize: 1 });
  const state = await store.captureStateOf(db, order.id);
  if (state === 'CAPTURED' || state === 'EXTERNAL') return { ok: true, order };
  return {
    ok: false,
    order,
    errors: [
      refuse('PAYMENT_IN_FLIGHT', 'the capture did not go through yet (the processor did not confirm it); try again', [
        'orderId',
      ]),
    ],
  };
}

/**
 * cancelOrder: one guarded transaction (cancel_confirmed_order); the refund itself is carried out by the compensation
 * worker, once.
 * @example await cancelOrder(deps, { orderId, restock: true })
 */
export async function cancelOrder(deps: AdminOrderDeps, input: CancelOrderInput): Promise<AdminOrderResult> {
  const { db, onOutboxWritten } = deps;
  if (!isUuid(input.orderId)) return notFound();
  if (input.reason && input.reason.length > MAX_REASON_LENGTH)
    return {
      ok: false,
      order: null,
      errors: [refuse('INVALID_INPUT', `reason must be at most ${MAX_REASON_LENGTH} characters`, ['reason'])],
    };
  const r = await store.cancelConfirmedOrder(db, input.orderId, input.restock ?? true, input.reason ?? null);
  switch (r.kind) {
    case 'not_found':
      return notFound();
    case 'cancelled':
      deps.metrics.paymentCompensations.inc({ event: 'recorded' });
      await onOutboxWritten((input.restock ?? true) ? r.order.lines.map((l) => l.sku) : undefined);
      return { ok: true, order: r.order };
    case 'already_cancelled':
      return { ok: true, order: r.order };
    case 'not_confirmed':
      return {
        ok: false,
        order: r.order,
        errors: [
          refuse(
            'ALREADY_FINAL',
            `only a CONFIRMED order can be cancelled here (this one is ${r.order.status}); release a held one with releaseReservation`,
            ['orderId'],
          ),
        ],
      };
  }
}
