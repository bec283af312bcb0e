// Reading one order: only the caller's own client's, and for a public key only with the order's token.
import type { Db } from '../db/pool.js';
import { findOrder, type OrderRecord } from '../db/orders-store.js';
import { latestPayment, type PaymentView } from '../db/payments-store.js';
import type { Caller } from '../common/caller.js';
import { isUuid } from './rules.js';
import { tokenScope } from './order-tokens.js';

/**
 * One of the caller's orders; null when unknown, another client's, or (public key) without its token.
 * @example await getOrder({ db }, { clientId: 'shop', role: 'public' }, orderId, 'ot_...')
 */
export async function getOrder(
  deps: { db: Db },
  caller: Pick<Caller, 'clientId'> & Partial<Caller>,
  id: string,
  token?: string | null,
): Promise<OrderRecord | null> {
  if (!isUuid(id)) return null;
  const scope = await tokenScope({ role: caller.role ?? 'storefront' }, token);
  if (scope === '') return null;
  return findOrder(deps.db, caller.clientId, id, scope);
}

/**
 * Whether the caller may act on the order: every server-side key on its client's orders (the database checks the
 * client), a public key only on the order whose token it presents.
 */
export async function mayActOn(
  deps: { db: Db },
  caller: Pick<Caller, 'clientId'> & Partial<Caller>,
  orderId: string,
  token?: string | null,
): Promise<boolean> {
  return caller.role !== 'public' || !isUuid(orderId) || (await getOrder(deps, caller, orderId, token)) !== null;
}

/** The latest payment attempt of one of the caller's orders (Order.payment); null: none. */
export function getPayment(
  deps: { db: Db },
  caller: { clientId: string; role?: string },
  orderId: string,
): Promise<PaymentView | null> {
  return latestPayment(deps.db, caller.role === 'admin' ? null : caller.clientId, orderId);
}
