// The Node host compiles each query and mutation document once (graphql-jit, node/compiled-execution.ts); the edge
// host executes with graphql-js. Both must answer alike: the same requests on the same database through both, and
// the answers compared whole (status and body: data, errors with their messages, paths and codes).
import { beforeAll, describe, expect, it } from 'vitest';
import { KEYS, ORDER_FIELDS, PLACE_ORDER, startTestApp } from './support/app.js';

const t = await startTestApp({ maxLines: 3, maxLineQuantity: 5 });

type Case = { name: string; query: string; variables?: Record<string, unknown>; key?: string | null };

let orderId = '';
beforeAll(async () => {
  await t.product('JIT-A', 4, 1250);
  await t.product('JIT-B', 0, 990);
  orderId = (await t.placeOrder({ idempotencyKey: 'jit-placed', customerId: 'jit-1', lines: [{ sku: 'JIT-A', quantity: 2 }] })).order!.id;
  await t.placeOrder({ idempotencyKey: 'jit-refused', customerId: 'jit-2', lines: [{ sku: 'JIT-B', quantity: 1 }] });
});

const cases = (): Case[] => [
  { name: 'the trivial query', query: '{ __typename }' },
  { name: 'a product with nested objects', query: 'query($s: String!) { product(sku: $s) { sku name price { amount currencyCode } availability { sku available soldOut version updatedAt } purchaseLimit } }', variables: { s: 'JIT-A' } },
  { name: 'a list with an unknown SKU (null in its place)', query: 'query($s: [String!]!) { products(skus: $s) { sku availability { available soldOut } } }', variables: { s: ['JIT-B', 'NOPE', 'JIT-A'] } },
  { name: 'aliases, fragments, a variable default and @include/@skip', query: 'query Q($inc: Boolean = true) { a: product(sku: "JIT-A") { ...P } b: product(sku: "JIT-B") @include(if: $inc) { ...P sku @skip(if: $inc) } } fragment P on Product { name price { amount } }' },
  { name: 'a connection page', query: '{ catalog(first: 1) { edges { cursor node { sku } } pageInfo { hasNextPage endCursor } } }' },
  { name: 'an order of this client', query: `query($id: ID!) { order(id: $id) { ${ORDER_FIELDS} } }`, variables: { id: orderId } },
  { name: 'the orders list, filtered', query: '{ orders(status: RESERVED, first: 5) { edges { node { id status total { amount } } } pageInfo { hasNextPage } } }' },
  { name: 'a replayed placeOrder (writes nothing)', query: PLACE_ORDER, variables: { input: { idempotencyKey: 'jit-placed', customerId: 'jit-1', lines: [{ sku: 'JIT-A', quantity: 2 }] } } },
  { name: 'a replayed sold-out refusal', query: PLACE_ORDER, variables: { input: { idempotencyKey: 'jit-refused', customerId: 'jit-2', lines: [{ sku: 'JIT-B', quantity: 1 }] } } },
  { name: 'a reused key (IDEMPOTENCY_KEY_REUSED)', query: PLACE_ORDER, variables: { input: { idempotencyKey: 'jit-placed', customerId: 'jit-1', lines: [{ sku: 'JIT-A', quantity: 1 }] } } },
  { name: 'input the domain refuses (userErrors, nothing written)', query: PLACE_ORDER, variables: { input: { idempotencyKey: 'jit-bad', customerId: 'jit-3', lines: [{ sku: 'JIT-A', quantity: 9 }, { sku: 'JIT-A', quantity: 1 }] } } },
  { name: 'a variable of the wrong type', query: PLACE_ORDER, variables: { input: { idempotencyKey: 'jit-bad', customerId: 'jit-3', lines: [{ sku: 'JIT-A', quantity: 'two' }] } } },
  { name: 'a missing required input field', query: PLACE_ORDER, variables: { input: { idempotencyKey: 'jit-bad', lines: [{ sku: 'JIT-A' }] } } },
  { name: 'a null for a non-null variable', query: PLACE_ORDER, variables: { input: null } },
  { name: 'a bad enum value', query: 'query($s: OrderStatus) { orders(status: $s) { edges { node { id } } } }', variables: { s: 'SHIPPED' } },
  { name: 'a page size out of range (BAD_USER_INPUT)', query: '{ catalog(first: 1000) { edges { cursor } } }' },
  { name: 'a field this key may not use (FORBIDDEN, partial data)', query: '{ a: product(sku: "JIT-A") { sku } c: channels { id } }' },
  { name: 'the same over several lines (error locations)', query: 'query Several {\r\n  a: product(sku: "JIT-A") { sku }\n\n    c: channels {\n id }\n}' },
  { name: 'an admin mutation refused for a storefront key', query: 'mutation { createProduct(input: { sku: "JIT-X", name: "x", priceAmount: 1, currencyCode: "USD", initialStock: 1 }) { product { sku } } }' },
  { name: 'no key at all', query: '{ product(sku: "JIT-A") { sku } }', key: null },
  { name: 'an unknown field (refused before execution)', query: '{ product(sku: "JIT-A") { nope } }' },
];

describe('compiled documents answer as graphql-js does', () => {
  it('answers every case alike, status and body', async () => {
    for (const c of cases()) {
      const key = c.key === undefined ? KEYS.storefront : c.key;
      const compiled = await t.gql(c.query, c.variables ?? {}, key, 'compiled');
      const plain = await t.gql(c.query, c.variables ?? {}, key, 'graphql-js');
      expect(compiled, c.name).toEqual(plain);
    }
  });

  it('writes nothing for the refused cases, on either', async () => {
    const { rows } = await t.db.query(`SELECT count(*)::int AS n FROM orders WHERE customer_id IN ('jit-3')`);
    expect(rows[0].n).toBe(0);
    expect(await t.inventory('JIT-A')).toEqual({ available: 2, reserved: 2, sold: 0 });
  });

  it('covers answers with data and with errors (the comparison is not between two empty answers)', async () => {
    const answers = await Promise.all(cases().map((c) => t.gql(c.query, c.variables ?? {}, c.key === undefined ? KEYS.storefront : c.key)));
    expect(answers.filter((a) => a.body.data && !a.body.errors).length).toBeGreaterThanOrEqual(8);
    expect(answers.filter((a) => a.body.errors?.length).length).toBeGreaterThanOrEqual(6);
    expect(answers.filter((a) => a.status !== 200).length).toBeGreaterThanOrEqual(2);
  });
});
