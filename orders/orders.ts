import type { Db } from '../db/pool.js';
import * as store from '../db/orders-store.js';
import type { OrderRecord } from '../db/orders-store.js';
import type { Metrics } from '../common/metrics.js';
import { isUuid, requestFingerprint, validatePayment, validatePlaceOrder, type LineInput, type PaymentInput } from './rules.js';
import { createClaimBatcher } from './claim-batcher.js';
import { retryReason } from '../db/retry.js';

/** SQLSTATEs of a database that is stuck or overloaded, not of a bad request: 55P03 lock_timeout, 57014 statement_timeout. */
const ENVIRONMENT_FAILURES = new Set(['55P03', '57014']);
import { payForOrder, type PaymentSettings } from './payment-step.js';
import type { Processor } from '../payments/processor.js';

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
  /** absent: placeOrder refuses a `payment` input */
  payments?: { processor: Processor; settings: PaymentSettings };
  /** told after a committed write that produced outbox rows (wakes the relay; never inside the transaction) */
  onOutboxWritten?: (skus?: string[]) => void | Promise<void>;
};

/** The order domain: placing, releasing and reading orders. Returns results; only faults throw. */
export function createOrders({ db, metrics, settings, payments, onOutboxWritten = () => {} }: OrdersDeps) {
  const outcome = (label: string) => metrics.placeOrderOutcomes.inc({ outcome: label });
  type Claim = Omit<store.PlaceOrderArgs, 'holdTtlSeconds' | 'retentionHours'>;
  const ttl = { holdTtlSeconds: settings.holdTtlSeconds, retentionHours: settings.idempotencyRetentionHours };
  /** time in the claiming transaction (one round trip, retries included) */
  const timed = async <T>(f: () => Promise<T>): Promise<T> => {
    const stop = metrics.claimSeconds.startTimer();
    try {
      return await f();
    } finally {
      stop();
    }
  };
  // Single-line orders for the same SKU share a transaction when they arrive together (see claim-batcher.ts).
  const batcher = createClaimBatcher<Claim, store.PlaceOrderRow>({
    run: (claims) =>
      timed(async () =>
        claims.length === 1
          ? [await store.placeOrder(db, { ...claims[0]!, ...ttl })]
          : store.placeOrders(db, claims, ttl.holdTtlSeconds, ttl.retentionHours),
      ),
    onBatch: (n) => metrics.claimBatchSize.observe(n),
    // lock/statement timeouts and connection failures concern every request alike: no point repeating each alone
    isolate: (err) => !ENVIRONMENT_FAILURES.has(String((err as { code?: unknown })?.code)) && !retryReason(err),
  });
  // Orders with a payment keep their key PROCESSING through the payment step; they take the direct path.
  const claim = (c: Claim): Promise<store.PlaceOrderRow> =>
    c.lines.length === 1 && !c.payment
      ? batcher(c.lines[0]!.sku, JSON.stringify([c.clientId, c.customerId, c.key]), c)
      : timed(() => store.placeOrder(db, { ...c, ...ttl }));

  async function placeOrder(
    caller: Caller,
    input: { idempotencyKey: string; customerId: string; lines: LineInput[]; payment?: PaymentInput | null },
  ): Promise<PlaceOrderResult> {
    const payment = input.payment ?? null;
    const invalid = validatePlaceOrder(input, settings);
    if (payment) invalid.push(...validatePayment(payment, payments?.processor.name ?? null));
    if (invalid.length) {
      outcome('INVALID_INPUT');
      return { ok: false, errors: invalid, order: null, replayed: false };
    }
    const r = await claim({
      clientId: caller.clientId,
      customerId: input.customerId,
      key: input.idempotencyKey,
      // I5: the payment is part of the request: the same key with another card is IDEMPOTENCY_KEY_REUSED
      requestHash: await requestFingerprint({ ...input, extra: payment ? { p: payment.provider, t: payment.token } : undefined }),
      lines: input.lines.map((l) => ({ sku: l.sku, quantity: l.quantity })),
      payment: !!payment,
      recoverySeconds: payments?.settings.recoverySeconds ?? null,
    });
    // after commit: wake the relay; a placed order changed its SKUs' availability (a rejected one did not)
    if (r.kind === 'placed') await onOutboxWritten(input.lines.map((l) => l.sku));
    else if (r.kind === 'rejected') await onOutboxWritten();
    switch (r.kind) {
      case 'placed': {
        if (!payment || !payments) {
          outcome('RESERVED');
          return { ok: true, order: r.order, replayed: false };
        }
        const key = { clientId: caller.clientId, customerId: input.customerId, key: input.idempotencyKey };
        const order = await payForOrder({ db, metrics, ...payments }, r.order, key, payment.token);
        // after the payment step's commits: a decline put the units back (availability changed), any outcome changed the status
        await onOutboxWritten(order.status === 'REJECTED' ? order.lines.map((l) => l.sku) : undefined);
        return paymentAnswer(order);
      }
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
      case 'total_too_large':
        outcome('INVALID_INPUT');
        return {
          ok: false,
          order: null,
          replayed: false,
          errors: [{ code: 'INVALID_INPUT', field: ['input', 'lines'], message: 'the order total is larger than an order may be' }],
        };
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

  function paymentAnswer(order: OrderRecord): PlaceOrderResult {
    outcome(order.status === 'REJECTED' ? (order.rejection?.code ?? 'REJECTED') : order.status);
    if (order.status === 'REJECTED')
      return { ok: false, order, replayed: false, errors: [{ code: 'PAYMENT_DECLINED', field: ['input', 'payment'], message: order.rejection?.message ?? 'the payment was declined' }] };
    if (order.status === 'EXPIRED')
      return { ok: false, order, replayed: false, errors: [{ code: 'RESERVATION_EXPIRED', field: ['input'], message: 'the hold expired before the payment could start' }] };
    return { ok: true, order, replayed: false };
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
    if (r.kind === 'released') await onOutboxWritten(r.order.lines.map((l) => l.sku));
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
