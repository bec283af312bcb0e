// The order domain as one object per host: placing, releasing and reading orders.
import type { Db } from '../db/pool.js';
import * as store from '../db/orders-store.js';
import type { OrderRecord } from '../db/orders-store.js';
import type { AfterCommit } from '../common/after-commit.js';
import type { Metrics } from '../common/metrics.js';
import type { OrderSettings } from '../common/config-sections.js';
import type { Processor } from '../payments/processor.js';
import type { PaymentSettings } from './payment-step.js';
import { createPlaceOrder } from './place-order.js';
import { createReleaseReservation } from './release-order.js';
import { createPayOrder } from './pay-order.js';
import { createConfirmOrder } from './confirm-order.js';
import { createAdminOrders } from './admin-orders.js';
import { createPages } from './pages.js';
import { findProducts } from '../db/catalog-store.js';
import { latestPayment, type PaymentView } from '../db/payments-store.js';
import { refuse } from './errors.js';
import { isUuid } from './rules.js';
import { hashOrderToken, mintOrderToken, tokenScope } from './order-tokens.js';
import type { Caller } from '../common/caller.js';
import type { PlaceOrderInput, PlaceOrderResult } from './place-order.js';
import type { ReleaseInput, ReleaseResult } from './release-order.js';
import type { PayOrderInput } from './pay-order.js';
import { buyerOf, type BuyerResult } from './buyer.js';
import { buyerTokens, createBuyerToken, type CreateBuyerTokenInput } from './buyer-tokens.js';

export type { OrderRecord };
export { toOrder } from '../db/orders-store.js';
export type { PlaceOrderInput, PlaceOrderResult } from './place-order.js';
export type { ReleaseInput, ReleaseResult } from './release-order.js';
export type { PayOrderInput, PayOrderResult } from './pay-order.js';
export type { ConfirmOrderInput, ConfirmOrderResult } from './confirm-order.js';
export type { CancelOrderInput, AdminOrderResult } from './admin-orders.js';
export type { PaymentView, BuyerResult, CreateBuyerTokenInput };

export type OrdersDeps = {
  db: Db;
  metrics: Metrics;
  settings: OrderSettings;
  /** absent: placeOrder refuses a `payment` input */
  payments?: { processor: Processor; settings: PaymentSettings };
  /** told after a committed write that produced outbox rows (wakes the relay; never inside the transaction) */
  onOutboxWritten?: AfterCommit;
  /** signs and checks buyer tokens (orders/buyer-tokens.ts); absent: none are minted or accepted */
  buyerTokenSecret?: string;
};

/**
 * The order domain: each use case lives in its own file; this wires them to one host's dependencies.
 * @example const orders = createOrders({ db, metrics, settings }); await orders.placeOrder(caller, input)
 */
export function createOrders(deps: OrdersDeps) {
  const onOutboxWritten = deps.onOutboxWritten ?? (() => {});
  // a public key's vouched buyers (orders/buyer-tokens.ts); without a secret this host mints and accepts none
  const tokens = deps.buyerTokenSecret ? buyerTokens(deps.buyerTokenSecret) : undefined;
  const place = createPlaceOrder({ ...deps, onOutboxWritten, buyerTokens: tokens });
  const release = createReleaseReservation({ ...deps, onOutboxWritten });
  const pay = createPayOrder({ ...deps, onOutboxWritten });
  /** One of the caller's orders; null when unknown, another client's, or (public key) without its token. */
  const getOrder = async (caller: Pick<Caller, 'clientId'> & Partial<Caller>, id: string, token?: string | null): Promise<OrderRecord | null> => {
    if (!isUuid(id)) return null;
    const scope = await tokenScope({ role: caller.role ?? 'storefront' }, token);
    if (scope === '') return null;
    return store.findOrder(deps.db, caller.clientId, id, scope);
  };
  return {
    /**
     * placeOrder, plus the order's token in the answer that created the order (`orderToken`), never in a replay: only
     * its hash is kept, so it cannot be handed out again.
     */
    placeOrder: async (
      caller: Pick<Caller, 'clientId'> & Partial<Caller>,
      input: PlaceOrderInput,
      buyer?: BuyerResult,
    ): Promise<PlaceOrderResult & { orderToken: string | null }> => {
      // minted before the claim, its hash written with the order in the claiming statement: a new order (placed or
      // rejected, never a replay) carries this call's token, so it is handed out; otherwise it is dropped unused
      const token = mintOrderToken();
      const r = await place(caller, input, await hashOrderToken(token), buyer);
      return { ...r, orderToken: r.order && !r.replayed ? token : null };
    },
    /** releaseReservation; a public key must present the order's token (without it: NOT_FOUND, nothing changes). */
    releaseReservation: async (caller: Pick<Caller, 'clientId'> & Partial<Caller>, input: ReleaseInput & { token?: string | null }): Promise<ReleaseResult> => {
      if (caller.role === 'public' && isUuid(input.orderId) && !(await getOrder(caller, input.orderId, input.token)))
        return { ok: false, order: null, errors: [refuse('NOT_FOUND', 'no such order', ['orderId'])] };
      return release(caller, input);
    },
    getOrder,
    /** The buyer a placeOrder of `input` counts against (orders/buyer.ts), or why its buyer token is refused. */
    buyerOf: (caller: Pick<Caller, 'clientId'> & Partial<Caller>, input: { customerId: string; buyerToken?: string | null }) => buyerOf(caller, input, tokens),
    /** createBuyerToken: a short-lived token vouching for one customer of the caller's client (orders/buyer-tokens.ts). */
    createBuyerToken: (caller: { clientId: string }, input: CreateBuyerTokenInput) => createBuyerToken(tokens, caller, input),
    /** payOrder; a public key must present the order's token (without it: NOT_FOUND, nothing changes). */
    payOrder: async (caller: Pick<Caller, 'clientId'> & Partial<Caller>, input: PayOrderInput) => {
      if (caller.role === 'public' && isUuid(input.orderId) && !(await getOrder(caller, input.orderId, input.token)))
        return { ok: false as const, order: null, errors: [refuse('NOT_FOUND', 'no such order', ['orderId'])] };
      return pay(caller, input);
    },
    confirmOrder: createConfirmOrder({ ...deps, onOutboxWritten }),
    ...createAdminOrders({ ...deps, processor: deps.payments?.processor, onOutboxWritten }),
    /** catalog(first, after) and orders(customerId, status, first, after) as Relay connections (orders/pages.ts) */
    pages: createPages({ db: deps.db, findProducts: (skus) => findProducts(deps.db, skus) }),
    /** The latest payment attempt of one of the caller's orders (Order.payment); null: none. */
    getPayment: (caller: { clientId: string; role?: string }, orderId: string): Promise<PaymentView | null> =>
      latestPayment(deps.db, caller.role === 'admin' ? null : caller.clientId, orderId),
  };
}
export type Orders = ReturnType<typeof createOrders>;
