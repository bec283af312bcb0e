import type { Catalog } from '../orders/catalog.js';
import type { Orders } from '../orders/orders.js';

export type Role = 'storefront' | 'partner' | 'admin';
/** Who is calling: set by the edge from the API key before GraphQL runs. */
export type Caller = { clientId: string; role: Role };
export type Context = { caller: Caller; orders: Orders; catalog: Catalog };
