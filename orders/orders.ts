import type { Db } from '../db/pool.js';
import * as store from '../db/orders-store.js';
import type { OrderRecord } from '../db/orders-store.js';
import type { Metrics } from './metrics.js';
import { isUuid, requestFingerprint, validatePlaceOrder, type LineInput } from './rules.js';

export type { OrderRecord };
export { toOrder } from '../db/orders-store.js';
export type Caller = { clientId: string };
export type DomainError = { code: string; message: string; field?: string[]; sku?: string | null };

export type PlaceOrderResult =
  | { ok: true; order: OrderRecord; replayed: boolean }
  | { ok: false; errors: DomainError[]; order: OrderRecord | null; replayed: boolean };

export type ReleaseResult = { ok: true; order: OrderRecord } | { ok: false; errors: DomainError[]; order: OrderRecord | null };

export type OrdersDeps = {
  db: Db;
  metrics: Metrics;
  settings: { holdTtlSeconds: number; idempotencyRetentionHours: number; maxLines: number; maxLineQuantity: number };
  /** told after a committed write that produced outbox rows (wakes the relay; never inside the transaction) */
  onOutboxWritten?: () => void;
};

/** The order domain: placing, releasing and reading orders. Returns results; only faults throw. */
export function createOrders({ db, metrics, settings, onOutboxWritten = () => {} }: OrdersDeps) {
  const outcome = (label: string) => metrics.placeOrderOutcomes.inc({ outcome: label });

  async function placeOrder(
    caller: Caller,
    input: { idempotencyKey: string; customerId: string; lines: LineInput[] },
  ): Promise<PlaceOrderResult> {
    const invalid = validatePlaceOrder(input, settings);
    if (invalid.length) {
      outcome('INVALID_INPUT');
      return { ok: false, errors: invalid, order: null, replayed: false };
    }
    const stop = metrics.claimSeconds.startTimer();
    let r: store.PlaceOrderRow;
    try {
      r = await store.placeOrder(db, {
        clientId: caller.clientId,
        customerId: input.customerId,
        key: input.idempotencyKey,
        requestHash: await requestFingerprint(input),
        lines: input.lines.map((l) => ({ sku: l.sku, quantity: l.quantity })),
        holdTtlSeconds: settings.holdTtlSeconds,
        retentionHours: settings.idempotencyRetentionHours,
      });
    } finally {
      stop();
    }
    if (r.kind === 'placed' || r.kind === 'rejected') onOutboxWritten();
    switch (r.kind) {
      case 'placed':
        outcome('RESERVED');
        return { ok: true, order: r.order, replayed: false };
      case 'rejected':
      case 'replayed': {
        const replayed = r.kind === 'replayed';
        outcome(replayed ? 'REPLAYED' : r.order.rejection!.code);
        if (!r.order.rejection) return { ok: true, order: r.order, replayed };
        return { ok: false, errors: [rejectionError(r.order, input.lines)], order: r.order, replayed };
      }
      case 'in_progress':
        outcome('IN_PROGRESS');
        return {
          ok: false,
          order: r.order,
          replayed: true,
          errors: [{ code: 'IN_PROGRESS', field: ['input', 'idempotencyKey'], message: 'the first request with this key is still being processed; retry shortly' }],
        };
      case 'reused':
        outcome('IDEMPOTENCY_KEY_REUSED');
        return {
          ok: false,
          order: null,
          replayed: false,
          errors: [{ code: 'IDEMPOTENCY_KEY_REUSED', field: ['input', 'idempotencyKey'], message: 'this idempotency key was already used for a different request' }],
        };
      case 'unknown_sku': {
        outcome('UNKNOWN_SKU');
        const i = input.lines.findIndex((l) => l.sku === r.sku);
        return {
          ok: false,
          order: null,
          replayed: false,
          errors: [{ code: 'UNKNOWN_SKU', field: ['input', 'lines', String(i), 'sku'], message: `no product with SKU ${r.sku}`, sku: r.sku }],
        };
      }
      case 'mixed_currency':
        outcome('INVALID_INPUT');
        return {
          ok: false,
          order: null,
          replayed: false,
          errors: [{ code: 'INVALID_INPUT', field: ['input', 'lines'], message: 'all lines of an order must be priced in one currency' }],
        };
    }
  }

  async function releaseReservation(caller: Caller, input: { orderId: string; reason?: string | null }): Promise<ReleaseResult> {
    const notFound: ReleaseResult = {
      ok: false,
      order: null,
      errors: [{ code: 'NOT_FOUND', field: ['input', 'orderId'], message: 'no such order' }],
    };
    if (!isUuid(input.orderId)) return notFound;
    if (input.reason && input.reason.length > 500)
      return { ok: false, order: null, errors: [{ code: 'INVALID_INPUT', field: ['input', 'reason'], message: 'reason must be at most 500 characters' }] };
    const r = await store.releaseOrder(db, caller.clientId, input.orderId, input.reason ?? null);
    if (r.kind === 'released') onOutboxWritten();
    switch (r.kind) {
      case 'not_found':
        return notFound;
      case 'released':
        metrics.reservationsReleased.inc();
        return { ok: true, order: r.order };
      case 'noop':
        return { ok: true, order: r.order };
      case 'already_final':
        return { ok: false, order: r.order, errors: [{ code: 'ALREADY_FINAL', field: ['input', 'orderId'], message: 'the order is confirmed; its units are sold' }] };
      case 'payment_in_flight':
        return {
          ok: false,
          order: r.order,
          errors: [{ code: 'PAYMENT_IN_FLIGHT', field: ['input', 'orderId'], message: 'a payment for this order may have succeeded; the hold stays until the processor answers' }],
        };
    }
  }

  async function getOrder(caller: Caller, id: string): Promise<OrderRecord | null> {
    return isUuid(id) ? store.findOrder(db, caller.clientId, id) : null;
  }

  return { placeOrder, releaseReservation, getOrder };
}
export type Orders = ReturnType<typeof createOrders>;

function rejectionError(order: OrderRecord, lines: LineInput[]): DomainError {
  const rej = order.rejection!;
  const i = lines.findIndex((l) => l.sku === rej.sku);
  return { code: rej.code, message: rej.message, sku: rej.sku ?? null, field: i >= 0 ? ['input', 'lines', String(i)] : undefined };
}
