// Reads a storefront expects, page by page (Relay connections): the catalog in SKU order and a client's orders newest
// first. Keyset pagination on an index, opaque cursors; `first` is bounded so no page is unbounded work.
import type { Db } from '../db/pool.js';
import * as catalogStore from '../db/catalog-store.js';
import * as ordersStore from '../db/orders-store.js';
import type { OrderRecord } from '../db/orders-store.js';
import type { Product } from '../db/catalog-store.js';
import { failed, type Result } from './errors.js';
import { isUuid } from './rules.js';

export const MAX_PAGE_SIZE = 100;
export const DEFAULT_PAGE_SIZE = 20;

export type Page<T> = {
  edges: { node: T; cursor: string }[];
  pageInfo: { hasNextPage: boolean; endCursor: string | null };
};

const encode = (parts: string[]) => Buffer.from(JSON.stringify(parts)).toString('base64url');
function decode(cursor: string, n: number): string[] | null {
  try {
    const v = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
    // a cursor this API gave out never holds a NUL character (no SKU or id can), and PostgreSQL could not compare one
    return Array.isArray(v) && v.length === n && v.every((x) => typeof x === 'string' && !x.includes('\u0000'))
      ? v
      : null;
  } catch {
    return null;
  }
}

function page<T>(rows: T[], first: number, cursorOf: (t: T) => string): Page<T> {
  const nodes = rows.slice(0, first);
  const edges = nodes.map((node) => ({ node, cursor: cursorOf(node) }));
  return { edges, pageInfo: { hasNextPage: rows.length > first, endCursor: edges.at(-1)?.cursor ?? null } };
}

function checkFirst(first: number | null | undefined): Result<number> {
  const n = first ?? DEFAULT_PAGE_SIZE;
  if (!Number.isInteger(n) || n < 1 || n > MAX_PAGE_SIZE)
    return failed('INVALID_INPUT', `first must be between 1 and ${MAX_PAGE_SIZE}`, ['first']);
  return { ok: true, value: n };
}

/**
 * catalog(first, after): products in SKU order, a Relay connection.
 * @example await catalogPage({ db }, { first: 20 })
 */
export async function catalogPage(
  deps: { db: Db },
  args: { first?: number | null; after?: string | null },
): Promise<Result<Page<Product>>> {
  const first = checkFirst(args.first);
  if (!first.ok) return first;
  const after = args.after ? decode(args.after, 1) : null;
  if (args.after && !after) return failed('INVALID_INPUT', 'after is not a cursor this API gave out', ['after']);
  const skus = await catalogStore.pageSkus(deps.db, after?.[0] ?? null, first.value + 1);
  const products = (await catalogStore.findProducts(deps.db, skus)).filter((p): p is Product => p !== null);
  return { ok: true, value: page(products, first.value, (p) => encode([p.sku])) };
}

/**
 * orders(customerId, status, first, after): a client's orders newest first (`clientId` null: every client's, admin).
 * @example await ordersPage({ db }, 'shop', { first: 20 })
 */
export async function ordersPage(
  deps: { db: Db },
  clientId: string | null,
  args: { customerId?: string | null; status?: string | null; first?: number | null; after?: string | null },
): Promise<Result<Page<OrderRecord>>> {
  const first = checkFirst(args.first);
  if (!first.ok) return first;
  const after = args.after ? decode(args.after, 2) : null;
  if (args.after && (!after || !isUuid(after[1]!) || Number.isNaN(Date.parse(after[0]!))))
    return failed('INVALID_INPUT', 'after is not a cursor this API gave out', ['after']);
  // no order has a customer with a NUL character (placeOrder refuses one): nothing to find, and no query to fail
  if (args.customerId?.includes('\u0000')) return { ok: true, value: page([], first.value, () => '') };
  const rows = await ordersStore.pageOrders(deps.db, {
    clientId,
    customerId: args.customerId ?? null,
    status: args.status ?? null,
    after: after ? { createdAt: after[0]!, id: after[1]! } : null,
    limit: first.value + 1,
  });
  return { ok: true, value: page(rows, first.value, (o) => encode([o.cursorKey.createdAt, o.cursorKey.id])) };
}
