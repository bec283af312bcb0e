// What every resolver receives: who is calling and the domain services of this request's host.
import type { Caller } from '../common/caller.js';
import type { Catalog } from '../orders/catalog.js';
import type { Orders } from '../orders/orders.js';
import type { PartnerDocuments } from '../orders/partner-documents.js';
import type { LivePubSub } from '../subscriptions/pubsub.js';

/** `live`: the pubsub subscriptions listen on (fed by the outbox relay); absent on hosts without subscriptions (Workers). */
export type Context = { caller: Caller; orders: Orders; catalog: Catalog; partners: PartnerDocuments; live?: LivePubSub };
