// catalog(first, after) and orders(customerId, status, first, after) as Relay connections (issue 10 item 7), through
// the whole pipeline on this file's database.
import { describe, expect, it } from 'vitest';
import { KEYS, startTestApp } from './support/app.js';

const t = await startTestApp();
const CATALOG = `query($first: Int, $after: String) { catalog(first: $first, after: $after) { edges { cursor node { sku availability { available soldOut } } } pageInfo { hasNextPage endCursor } } }`;
const ORDERS = `query($customerId: ID, $status: OrderStatus, $first: Int, $after: String) { orders(customerId: $customerId, status: $status, first: $first, after: $after) { edges { cursor node { id status customerId } } pageInfo { hasNextPage endCursor } } }`;

async function all(query: string, vars: Record<string, unknown>, field: 'catalog' | 'orders', key = KEYS.storefront) {
  const nodes: any[] = [];
  let after: string | null = null;
  for (let i = 0; i < 50; i++) {
    const r = await t.gql(query, { ...vars, after }, key);
    expect(r.status).toBe(200);
    const c = r.body.data[field];
    nodes.push(...c.edges.map((e: any) => e.node));
    if (!c.pageInfo.hasNextPage) return nodes;
    after = c.pageInfo.endCursor;
  }
  throw new Error('no last page');
}

describe('catalog(first, after)', () => {
  it('pages through every product in SKU order with availability, each once', async () => {
    const skus = ['PG-C', 'PG-A', 'PG-E', 'PG-B', 'PG-D'];
    for (const [i, s] of skus.entries()) await t.product(s, i);
    const first = await t.gql(CATALOG, { first: 2 });
    expect(first.body.data.catalog.edges.map((e: any) => e.node.sku)).toEqual(['PG-A', 'PG-B']);
    expect(first.body.data.catalog.pageInfo.hasNextPage).toBe(true);
    const nodes = await all(CATALOG, { first: 2 }, 'catalog');
    expect(nodes.map((p) => p.sku)).toEqual(['PG-A', 'PG-B', 'PG-C', 'PG-D', 'PG-E']);
    expect(nodes.find((p) => p.sku === 'PG-C').availability).toEqual({ available: 0, soldOut: true });
    expect(nodes.find((p) => p.sku === 'PG-D').availability).toEqual({ available: 4, soldOut: false });
  });

  it('refuses a page size out of 1..100 and a cursor it did not give out (400)', async () => {
    for (const vars of [{ first: 0 }, { first: 101 }, { after: 'not-a-cursor' }]) {
      const r = await t.gql(CATALOG, vars);
      expect(r.status).toBe(400);
      expect(r.body.errors[0].extensions.code).toBe('BAD_USER_INPUT');
    }
  });
});

describe('orders(customerId, status, first, after)', () => {
  it("shows a storefront its own client's orders newest first, filtered; an admin every client's", async () => {
    await t.product('PG-ORD', 20);
    const ids: string[] = [];
    for (let i = 0; i < 5; i++)
      ids.push(
        (
          await t.placeOrder({
            idempotencyKey: `pg-${i}`,
            customerId: i % 2 ? 'pg-odd' : 'pg-even',
            lines: [{ sku: 'PG-ORD', quantity: 1 }],
          })
        ).order!.id,
      );
    const other = (
      await t.placeOrder(
        { idempotencyKey: 'pg-other', customerId: 'pg-even', lines: [{ sku: 'PG-ORD', quantity: 1 }] },
        KEYS.storefront2,
      )
    ).order!.id;
    await t.gql(`mutation($i: ReleaseReservationInput!) { releaseReservation(input: $i) { userErrors { code } } }`, {
      i: { orderId: ids[0] },
    });

    const mine = await all(ORDERS, { first: 2 }, 'orders');
    expect(mine.map((o) => o.id)).toEqual([...ids].reverse()); // newest first, every one once, not the other client's
    const even = await all(ORDERS, { customerId: 'pg-even', first: 1 }, 'orders');
    expect(even.map((o) => o.id)).toEqual([ids[4], ids[2], ids[0]]);
    const cancelled = await all(ORDERS, { status: 'CANCELLED' }, 'orders');
    expect(cancelled.map((o) => o.id)).toEqual([ids[0]]);
    const theirs = await all(ORDERS, {}, 'orders', KEYS.storefront2);
    expect(theirs.map((o) => o.id)).toEqual([other]);
    const everything = await all(ORDERS, { first: 3 }, 'orders', KEYS.admin);
    expect(new Set(everything.map((o) => o.id))).toEqual(new Set([...ids, other]));
    const r = await t.gql(ORDERS, {}, KEYS.partner);
    // partners run persisted operations only: a document is refused before it runs
    expect(r.status).toBe(403);
    expect(r.body.errors?.[0]?.extensions?.code).toBe('PERSISTED_QUERY_ONLY');
    expect(r.body.data ?? null).toBeNull();
  });
});
