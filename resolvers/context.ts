// What every resolver receives: who is calling and the domain services of this request's host.
import type { Caller } from '../common/caller.js';
import type { Catalog } from '../orders/catalog.js';
import type { BuyerResult, Orders } from '../orders/orders.js';
import type { PartnerDocuments } from '../orders/partner-documents.js';
import type { Channels } from '../orders/channels.js';
import type { ShopConsole } from '../orders/shop-console.js';
import type { Events } from '../orders/events.js';
import type { LivePubSub } from '../subscriptions/pubsub.js';

/**
 * `live`: the pubsub subscriptions listen on (fed by the outbox relay); absent on hosts without subscriptions (Workers).
 * `admitBuyer`: the per-buyer rate limit on placeOrder, `n` placeOrders of `buyer` at once (throws RATE_LIMITED); absent:
 * none on this host. `buyerOf`: the buyer of a placeOrder input, resolved once per request (the operation guard counts
 * it, the resolver places with it).
 */
export type Context = {
  caller: Caller;
  orders: Orders;
  catalog: Catalog;
  partners: PartnerDocuments;
  channels: Channels;
  /** the shop console's reads (docs/console.md) */
  shopConsole: ShopConsole;
  events: Events;
  live?: LivePubSub;
  admitBuyer?: (caller: Caller, buyer: string, n?: number) => Promise<void>;
  buyerOf: (input: { customerId: string; buyerToken?: string | null }) => Promise<BuyerResult>;
};
