// The order domain of one host: each use case is an exported function of its own file taking its dependencies as its
// first argument; this file builds those dependencies once per host (the claim batcher among them) and binds them.
import type { Db } from '../db/pool.js';
import type { OrderRecord } from '../db/orders-store.js';
import type { PaymentView } from '../db/payments-store.js';
import type { AfterCommit } from '../common/after-commit.js';
import type { Metrics } from '../common/metrics.js';
import type { OrderSettings } from '../common/config-sections.js';
import type { Caller } from '../common/caller.js';
import type { Processor } from '../payments/processor.js';
import type { PaymentSettings } from './payment-step.js';
import { placeOrder, type PlaceOrderDeps, type PlaceOrderInput } from './place-order.js';
import { releaseReservation, type ReleaseInput } from './release-order.js';
import { payOrder, type PayOrderInput } from './pay-order.js';
import { confirmOrder, type ConfirmOrderInput } from './confirm-order.js';
import { cancelOrder, captureOrder, type CancelOrderInput } from './admin-orders.js';
import { getOrder, getPayment } from './get-order.js';
import { catalogPage, ordersPage } from './pages.js';
import { createClaimBatcher } from './claim-batcher.js';
import { buyerOf, type BuyerResult } from './buyer.js';
import { buyerTokens, createBuyerToken, type CreateBuyerTokenInput } from './buyer-tokens.js';
import * as drops from './drops.js';

export type { OrderRecord, PaymentView, BuyerResult, CreateBuyerTokenInput };
export { toOrder } from '../db/orders-store.js';
export { toDropEntry } from './drops.js';
export type { PlaceOrderInput, PlaceOrderResult } from './place-order.js';
export type { ReleaseInput, ReleaseResult } from './release-order.js';
export type { PayOrderInput, PayOrderResult } from './pay-order.js';
export type { ConfirmOrderInput, ConfirmOrderResult } from './confirm-order.js';
export type { CancelOrderInput, AdminOrderResult } from './admin-orders.js';
export type {
  CreateDropInput,
  EnterDropInput,
  DropRecord,
  DropEntryRecord,
  JoinWaitlistInput,
  WaitlistEntryRecord,
} from './drops.js';

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

type AnyCaller = Pick<Caller, 'clientId'> & Partial<Caller>;

/**
 * One host's order domain: its use cases bound to its dependencies.
 * @example const orders = createOrders({ db, metrics, settings }); await orders.placeOrder(caller, input)
 */
export function createOrders(deps: OrdersDeps) {
  const { db, metrics, settings, payments } = deps;
  const onOutboxWritten = deps.onOutboxWritten ?? (() => {});
  // a public key's vouched buyers (orders/buyer-tokens.ts); without a secret this host mints and accepts none
  const tokens = deps.buyerTokenSecret ? buyerTokens(deps.buyerTokenSecret) : undefined;
  const claims = createClaimBatcher(
    {
      db,
      metrics,
      holdTtlSeconds: settings.holdTtlSeconds,
      retentionHours: settings.idempotencyRetentionHours,
      maxActiveHolds: settings.maxActiveHolds,
    },
    {
      batching: settings.claimBatching,
      maxInFlight: settings.claimBatchesInFlight,
      lanesPerSku: settings.claimLanesPerSku ?? 1,
    },
  );
  const placing: PlaceOrderDeps = { db, metrics, settings, payments, onOutboxWritten, claims, buyerTokens: tokens };
  const changing = { db, metrics, payments, onOutboxWritten };
  const admin = { db, metrics, processor: payments?.processor, onOutboxWritten };
  const dropping = { db, onOutboxWritten, entriesPerAddress: settings.dropEntriesPerAddress, buyerTokens: tokens };
  return {
    /** `buyer`: the buyer when the caller resolved it already (the operation guard did, for the per-buyer rate limit) */
    placeOrder: (caller: AnyCaller, input: PlaceOrderInput, buyer?: BuyerResult) =>
      placeOrder(placing, caller, input, buyer),
    releaseReservation: (caller: AnyCaller, input: ReleaseInput) => releaseReservation(changing, caller, input),
    payOrder: (caller: AnyCaller, input: PayOrderInput) => payOrder(changing, caller, input),
    confirmOrder: (caller: { clientId: string; role?: string }, input: ConfirmOrderInput) =>
      confirmOrder(changing, caller, input),
    captureOrder: (input: { orderId: string }) => captureOrder(admin, input),
    cancelOrder: (input: CancelOrderInput) => cancelOrder(admin, input),
    getOrder: (caller: AnyCaller, id: string, token?: string | null) => getOrder({ db }, caller, id, token),
    /** The buyer a placeOrder of `input` counts against (orders/buyer.ts), or why its buyer token is refused. */
    buyerOf: (caller: AnyCaller, input: { customerId: string; buyerToken?: string | null }) =>
      buyerOf(caller, input, tokens),
    /** createBuyerToken: a short-lived token vouching for one customer of the caller's client (orders/buyer-tokens.ts). */
    createBuyerToken: (caller: { clientId: string }, input: CreateBuyerTokenInput) =>
      createBuyerToken(tokens, caller, input),
    getPayment: (caller: { clientId: string; role?: string }, orderId: string) => getPayment({ db }, caller, orderId),
    /** catalog(first, after) and orders(customerId, status, first, after) as Relay connections (orders/pages.ts) */
    catalogPage: (args: Parameters<typeof catalogPage>[1]) => catalogPage({ db }, args),
    ordersPage: (clientId: string | null, args: Parameters<typeof ordersPage>[2]) => ordersPage({ db }, clientId, args),
    /** drops (docs/drops.md): createDrop (admin), enterDrop, and reading drops and entries */
    createDrop: (caller: AnyCaller, input: drops.CreateDropInput) => drops.createDrop(dropping, caller, input),
    enterDrop: (caller: AnyCaller, input: drops.EnterDropInput) => drops.enterDrop(dropping, caller, input),
    getDrop: (id: string) => drops.getDrop(dropping, id),
    listDrops: (first: number) => drops.listDrops(dropping, first),
    drawOrder: (dropId: string) => drops.drawOrder(dropping, dropId),
    getDropEntry: (caller: AnyCaller, id: string, token?: string | null) =>
      drops.getDropEntry(dropping, caller, id, token),
    joinWaitlist: (caller: AnyCaller, input: drops.JoinWaitlistInput) =>
      drops.joinWaitlist({ ...dropping, claimSeconds: settings.waitlistClaimSeconds }, caller, input),
    getWaitlistEntry: (caller: AnyCaller, id: string, token?: string | null) =>
      drops.getWaitlistEntry(dropping, caller, id, token),
  };
}
export type Orders = ReturnType<typeof createOrders>;
