import type { Catalog } from '../orders/catalog.js';
import type { Orders } from '../orders/orders.js';
import type { LivePubSub } from '../subscriptions/pubsub.js';

export type Role = 'storefront' | 'partner' | 'admin';
/** Who is calling: set by the edge from the API key before GraphQL runs. */
export type Caller = { clientId: string; role: Role };
/** `live`: the pubsub subscriptions listen on (fed by the outbox relay); absent on hosts without subscriptions (Workers). */
export type Context = { caller: Caller; orders: Orders; catalog: Catalog; live?: LivePubSub };
