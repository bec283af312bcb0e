// placeOrder: validate, claim in PostgreSQL (one round trip, coalesced per hot SKU), then the payment step if any.
import type { Db } from '../db/pool.js';
import * as store from '../db/orders-store.js';
import type { OrderRecord } from '../db/orders-store.js';
import { retryReason } from '../db/retry.js';
import type { AfterCommit } from '../common/after-commit.js';
import type { Metrics } from '../common/metrics.js';
import type { OrderSettings } from '../common/config-sections.js';
import type { Processor } from '../payments/processor.js';
import { refuse, rejectionOf, type DomainError } from './errors.js';
import { requestFingerprint, validatePayment, validatePlaceOrder, type LineInput, type PaymentInput } from './rules.js';
import { createClaimBatcher } from './claim-batcher.js';
import { payForOrder, type PaymentSettings } from './payment-step.js';
import { buyerOf, type BuyerResult } from './buyer.js';
import type { BuyerTokens } from './buyer-tokens.js';
import type { Caller } from '../common/caller.js';

/** SQLSTATEs of a database that is stuck or overloaded, not of a bad request: 55P03 lock_timeout, 57014 statement_timeout. */
const ENVIRONMENT_FAILURES = new Set(['55P03', '57014']);

/** `buyerToken`: a public key's vouched buyer (orders/buyer-tokens.ts); not part of the request fingerprint (I5). */
export type PlaceOrderInput = { idempotencyKey: string; customerId: string; lines: LineInput[]; payment?: PaymentInput | null; buyerToken?: string | null };
export type PlaceOrderResult =
  | { ok: true; order: OrderRecord; replayed: boolean }
  | { ok: false; errors: DomainError[]; order: OrderRecord | null; replayed: boolean };

export type PlaceOrderDeps = {
  db: Db;
  metrics: Metrics;
  settings: OrderSettings;
  /** absent: placeOrder refuses a `payment` input */
  payments?: { processor: Processor; settings: PaymentSettings };
  onOutboxWritten: AfterCommit;
  /** absent: a public key's buyerToken is refused (its orders count by address) */
  buyerTokens?: BuyerTokens;
};

const refused = (errors: DomainError[], order: OrderRecord | null = null, replayed = false): PlaceOrderResult => ({ ok: false, errors, order, replayed });

/**
 * The placeOrder use case (docs/architecture.md, "The life of an order"). Returns results; only faults throw.
 * @example const placeOrder = createPlaceOrder(deps); const r = await placeOrder({ clientId }, input)
 */
export function createPlaceOrder({ db, metrics, settings, payments, onOutboxWritten, buyerTokens }: PlaceOrderDeps) {
  const outcome = (label: string) => metrics.placeOrderOutcomes.inc({ outcome: label });
  type Claim = Omit<store.PlaceOrderArgs, 'holdTtlSeconds' | 'retentionHours' | 'maxActiveHolds'>;
  const { maxActiveHolds } = settings;
  const ttl = { holdTtlSeconds: settings.holdTtlSeconds, retentionHours: settings.idempotencyRetentionHours, maxActiveHolds };
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
          : store.placeOrders(db, claims, ttl.holdTtlSeconds, ttl.retentionHours, maxActiveHolds),
      ),
    maxInFlight: settings.claimBatchesInFlight,
    onBatch: (n) => metrics.claimBatchSize.observe(n),
    // lock/statement timeouts and connection failures concern every request alike: no point repeating each alone
    isolate: (err) => !ENVIRONMENT_FAILURES.has(String((err as { code?: unknown })?.code)) && !retryReason(err),
  });
  // Orders with a payment keep their key PROCESSING through the payment step; they take the direct path, and so does
  // every order with batching off (CLAIM_BATCHING=off: the races are decided by PostgreSQL alone).
  const batching = settings.claimBatching;
  const claim = (c: Claim): Promise<store.PlaceOrderRow> =>
    batching && c.lines.length === 1 && !c.payment
      ? batcher(c.lines[0]!.sku, JSON.stringify([c.clientId, c.customerId, c.key]), c)
      : timed(() => store.placeOrder(db, { ...c, ...ttl }));

  function paymentAnswer(order: OrderRecord): PlaceOrderResult {
    outcome(order.status === 'REJECTED' ? (order.rejection?.code ?? 'REJECTED') : order.status);
    if (order.status === 'REJECTED') return refused([refuse('PAYMENT_DECLINED', order.rejection?.message ?? 'the payment was declined', ['payment'])], order);
    if (order.status === 'EXPIRED') return refused([refuse('RESERVATION_EXPIRED', 'the hold expired before the payment could start', [])], order);
    return { ok: true, order, replayed: false };
  }

  /**
   * `tokenHash`: the SHA-256 of the order token the caller hands out with a new order (written with the order);
   * `resolved`: the buyer, when the caller resolved it already (the operation guard's rate limit did: orders/buyer.ts).
   */
  return async function placeOrder(
    caller: Pick<Caller, 'clientId'> & Partial<Caller>,
    input: PlaceOrderInput,
    tokenHash?: string,
    resolved?: BuyerResult,
  ): Promise<PlaceOrderResult> {
    const payment = input.payment ?? null;
    // I15: everything that refuses an order is decided before the claim, so a refusal writes nothing
    const invalid = validatePlaceOrder(input, settings);
    if (payment) invalid.push(...validatePayment(payment, payments?.processor.name ?? null));
    const buyer = resolved ?? (await buyerOf(caller, input, buyerTokens));
    if (!buyer.ok) invalid.push(...buyer.errors);
    if (invalid.length || !buyer.ok) {
      outcome('INVALID_INPUT');
      return refused(invalid);
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
      // I14: whom the hold counts against; I12: whom the purchase counter counts when not the customerId
      buyer: buyer.buyer.id,
      countedCustomer: buyer.buyer.countedCustomer,
      tokenHash,
    });
    // after commit: wake the relay; a placed order changed its SKUs' availability (a rejected one did not)
    if (r.kind === 'placed') await onOutboxWritten(input.lines.map((l) => l.sku));
    else if (r.kind === 'rejected' && !r.quiet) await onOutboxWritten(); // refused at a glance: nothing in the outbox
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
        const rejection = rejectionOf(r.order);
        outcome(replayed ? 'REPLAYED' : (rejection?.code ?? 'REJECTED'));
        if (!rejection) return { ok: true, order: r.order, replayed };
        const i = input.lines.findIndex((l) => l.sku === rejection.sku);
        return refused([{ ...rejection, ...(i >= 0 ? { path: ['lines', String(i)] } : {}) }], r.order, replayed);
      }
      case 'in_progress':
        outcome('IN_PROGRESS');
        return refused([refuse('IN_PROGRESS', 'the first request with this key is still being processed; retry shortly', ['idempotencyKey'])], r.order, true);
      case 'reused':
        outcome('IDEMPOTENCY_KEY_REUSED');
        return refused([refuse('IDEMPOTENCY_KEY_REUSED', 'this idempotency key was already used for a different request', ['idempotencyKey'])]);
      case 'unknown_sku': {
        outcome('UNKNOWN_SKU');
        const i = input.lines.findIndex((l) => l.sku === r.sku);
        return refused([refuse('UNKNOWN_SKU', `no product with SKU ${r.sku}`, ['lines', String(i), 'sku'], r.sku)]);
      }
      case 'total_too_large':
        outcome('INVALID_INPUT');
        return refused([refuse('INVALID_INPUT', 'the order total is larger than an order may be', ['lines'])]);
      case 'mixed_currency':
        outcome('INVALID_INPUT');
        return refused([refuse('INVALID_INPUT', 'all lines of an order must be priced in one currency', ['lines'])]);
    }
  };
}
