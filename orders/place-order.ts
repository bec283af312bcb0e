// placeOrder: validate, claim in PostgreSQL (one round trip, coalesced per hot SKU), then the payment step if any.
import type { OrderRecord, PlaceOrderRow } from '../db/orders-store.js';
import type { Db } from '../db/pool.js';
import type { AfterCommit } from '../common/after-commit.js';
import type { Metrics } from '../common/metrics.js';
import type { OrderSettings } from '../common/config-sections.js';
import type { Processor } from '../payments/processor.js';
import type { Caller } from '../common/caller.js';
import { refuse, rejectionOf, type DomainError } from './errors.js';
import { requestFingerprint, validatePayment, validatePlaceOrder, type LineInput, type PaymentInput } from './rules.js';
import { claimOrder, type ClaimBatcher } from './claim-batcher.js';
import { payForOrder, type PaymentSettings } from './payment-step.js';
import { buyerOf, type BuyerResult } from './buyer.js';
import type { BuyerTokens } from './buyer-tokens.js';
import { hashOrderToken, mintOrderToken } from './order-tokens.js';

/** `buyerToken`: a public key's vouched buyer (orders/buyer-tokens.ts); not part of the request fingerprint (I5). */
export type PlaceOrderInput = {
  idempotencyKey: string;
  customerId: string;
  lines: LineInput[];
  payment?: PaymentInput | null;
  buyerToken?: string | null;
};
type Answer =
  | { ok: true; order: OrderRecord; replayed: boolean }
  | { ok: false; errors: DomainError[]; order: OrderRecord | null; replayed: boolean };
/** `orderToken`: the new order's token (public keys reach their order with it), only in the answer that created it. */
export type PlaceOrderResult = Answer & { orderToken: string | null };

export type PlaceOrderDeps = {
  db: Db;
  metrics: Metrics;
  settings: OrderSettings;
  /** absent: placeOrder refuses a `payment` input */
  payments?: { processor: Processor; settings: PaymentSettings };
  onOutboxWritten: AfterCommit;
  /** this host's claims, alone or coalesced per SKU (orders/claim-batcher.ts) */
  claims: ClaimBatcher;
  /** absent: a public key's buyerToken is refused (its orders count by address) */
  buyerTokens?: BuyerTokens;
};

const refused = (errors: DomainError[], order: OrderRecord | null = null, replayed = false): Answer => ({
  ok: false,
  errors,
  order,
  replayed,
});
const outcome = (deps: PlaceOrderDeps, label: string) => deps.metrics.placeOrderOutcomes.inc({ outcome: label });

/**
 * The placeOrder use case (docs/architecture.md, "The life of an order"). Returns results; only faults throw.
 * `resolved`: the buyer, when the caller resolved it already (the operation guard's rate limit did: orders/buyer.ts).
 * @example const r = await placeOrder(deps, { clientId: 'shop', role: 'storefront' }, input)
 */
export async function placeOrder(
  deps: PlaceOrderDeps,
  caller: Pick<Caller, 'clientId'> & Partial<Caller>,
  input: PlaceOrderInput,
  resolved?: BuyerResult,
): Promise<PlaceOrderResult> {
  const payment = input.payment ?? null;
  // I15: everything that refuses an order is decided before the claim, so a refusal writes nothing
  const invalid = validatePlaceOrder(input, deps.settings);
  if (payment) invalid.push(...validatePayment(payment, deps.payments?.processor.name ?? null));
  const buyer = resolved ?? (await buyerOf(caller, input, deps.buyerTokens));
  if (!buyer.ok) invalid.push(...buyer.errors);
  if (invalid.length || !buyer.ok) {
    outcome(deps, 'INVALID_INPUT');
    return { ...refused(invalid), orderToken: null };
  }
  // The order token is decided here: minted before the claim, its hash written by the claiming statement with the
  // order it creates (placed or rejected), and handed out with that order only; a replay writes none and gets none.
  const token = mintOrderToken();
  const row = await claimOrder(deps.claims, {
    clientId: caller.clientId,
    customerId: input.customerId,
    key: input.idempotencyKey,
    // I5: the payment is part of the request: the same key with another card is IDEMPOTENCY_KEY_REUSED
    requestHash: await requestFingerprint({
      ...input,
      extra: payment ? { p: payment.provider, t: payment.token } : undefined,
    }),
    lines: input.lines.map((l) => ({ sku: l.sku, quantity: l.quantity })),
    payment: !!payment,
    recoverySeconds: deps.payments?.settings.recoverySeconds ?? null,
    // I14: whom the hold counts against; I12: whom the purchase counter counts when not the customerId
    buyer: buyer.buyer.id,
    countedCustomer: buyer.buyer.countedCustomer,
    tokenHash: await hashOrderToken(token),
  });
  const created = row.kind === 'placed' || row.kind === 'rejected';
  return { ...(await answerClaim(deps, caller, input, row)), orderToken: created ? token : null };
}

/** What placeOrder answers for the claim's row: the order, the payment step's outcome, or why not. */
async function answerClaim(
  deps: PlaceOrderDeps,
  caller: Pick<Caller, 'clientId'>,
  input: PlaceOrderInput,
  r: PlaceOrderRow,
): Promise<Answer> {
  // after commit: wake the relay; a placed order changed its SKUs' availability (a rejected one did not)
  if (r.kind === 'placed') await deps.onOutboxWritten(input.lines.map((l) => l.sku));
  else if (r.kind === 'rejected' && !r.quiet) await deps.onOutboxWritten(); // refused at a glance: nothing in the outbox
  switch (r.kind) {
    case 'placed': {
      const payment = input.payment;
      if (!payment || !deps.payments) {
        outcome(deps, 'RESERVED');
        return { ok: true, order: r.order, replayed: false };
      }
      const key = { clientId: caller.clientId, customerId: input.customerId, key: input.idempotencyKey };
      const order = await payForOrder(
        { db: deps.db, metrics: deps.metrics, ...deps.payments },
        r.order,
        key,
        payment.token,
      );
      // after the payment step's commits: a decline put the units back (availability changed), any outcome changed the status
      await deps.onOutboxWritten(order.status === 'REJECTED' ? order.lines.map((l) => l.sku) : undefined);
      return paymentAnswer(deps, order);
    }
    case 'rejected':
    case 'replayed': {
      const replayed = r.kind === 'replayed';
      const rejection = rejectionOf(r.order);
      outcome(deps, replayed ? 'REPLAYED' : (rejection?.code ?? 'REJECTED'));
      if (!rejection) return { ok: true, order: r.order, replayed };
      const i = input.lines.findIndex((l) => l.sku === rejection.sku);
      return refused([{ ...rejection, ...(i >= 0 ? { path: ['lines', String(i)] } : {}) }], r.order, replayed);
    }
    case 'in_progress':
      outcome(deps, 'IN_PROGRESS');
      return refused(
        [
          refuse('IN_PROGRESS', 'the first request with this key is still being processed; retry shortly', [
            'idempotencyKey',
          ]),
        ],
        r.order,
        true,
      );
    case 'reused':
      outcome(deps, 'IDEMPOTENCY_KEY_REUSED');
      return refused([
        refuse('IDEMPOTENCY_KEY_REUSED', 'this idempotency key was already used for a different request', [
          'idempotencyKey',
        ]),
      ]);
    case 'unknown_sku': {
      outcome(deps, 'UNKNOWN_SKU');
      const i = input.lines.findIndex((l) => l.sku === r.sku);
      return refused([refuse('UNKNOWN_SKU', `no product with SKU ${r.sku}`, ['lines', String(i), 'sku'], r.sku)]);
    }
    case 'total_too_large':
      outcome(deps, 'INVALID_INPUT');
      return refused([refuse('INVALID_INPUT', 'the order total is larger than an order may be', ['lines'])]);
    case 'mixed_currency':
      outcome(deps, 'INVALID_INPUT');
      return refused([refuse('INVALID_INPUT', 'all lines of an order must be priced in one currency', ['lines'])]);
  }
}

/** The answer after the payment step: confirmed or still awaiting its outcome, declined, or expired before it began. */
function paymentAnswer(deps: PlaceOrderDeps, order: OrderRecord): Answer {
  outcome(deps, order.status === 'REJECTED' ? (order.rejection?.code ?? 'REJECTED') : order.status);
  if (order.status === 'REJECTED')
    return refused(
      [refuse('PAYMENT_DECLINED', order.rejection?.message ?? 'the payment was declined', ['payment'])],
      order,
    );
  if (order.status === 'EXPIRED')
    return refused([refuse('RESERVATION_EXPIRED', 'the hold expired before the payment could start', [])], order);
  return { ok: true, order, replayed: false };
}
