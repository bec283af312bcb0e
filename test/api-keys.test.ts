import { describe, expect, it } from 'vitest';
import { startTestApp } from './support/app.js';

const OLD = 'acme_old_key_0001';
const NEW = 'acme_new_key_0002';
const OTHER = 'globex_key_00003';
const t = await startTestApp({
  keys: [
    { role: 'storefront', client: 'acme', key: OLD },
    { role: 'storefront', client: 'acme', key: NEW },
    { role: 'storefront', client: 'globex', key: OTHER },
    { role: 'admin', key: 'admin_key_for_setup' },
  ],
});
await (async () => {
  const r = await t.gql(
    `mutation { createProduct(input: { sku: "ROT-1", name: "Rotated", priceAmount: 100, currencyCode: "USD", initialStock: 5 }) { userErrors { code } } }`,
    {},
    'admin_key_for_setup',
  );
  if (r.body.data.createProduct.userErrors.length) throw new Error(JSON.stringify(r.body));
})();

describe('API keys that name their client (role:client:key)', () => {
  it("keeps a client's orders and idempotency keys across a key rotation", async () => {
    const input = { idempotencyKey: 'tap-rot-1', customerId: 'cust-9', lines: [{ sku: 'ROT-1', quantity: 2 }] };
    const first = await t.placeOrder(input, OLD);
    expect(first.order!.status).toBe('RESERVED');
    // the shop rotates its key: the retry with the new key replays the same order instead of placing a second one
    const retry = await t.placeOrder(input, NEW);
    expect(retry).toMatchObject({ replayed: true, order: { id: first.order!.id } });
    const q = `query($id: ID!) { order(id: $id) { id status } }`;
    expect((await t.gql(q, { id: first.order!.id }, NEW)).body.data.order).toEqual({
      id: first.order!.id,
      status: 'RESERVED',
    });
    expect((await t.release(first.order!.id, NEW)).order!.status).toBe('CANCELLED');
    expect((await t.inventory('ROT-1')).available).toBe(5);
  });

  it('keeps clients apart: another client sees nothing of them', async () => {
    const { order } = await t.placeOrder(
      { idempotencyKey: 'tap-rot-2', customerId: 'cust-9', lines: [{ sku: 'ROT-1', quantity: 1 }] },
      OLD,
    );
    expect(
      (await t.gql(`query($id: ID!) { order(id: $id) { id } }`, { id: order!.id }, OTHER)).body.data.order,
    ).toBeNull();
    // the same key string under another client is another request scope: a new order, not a replay
    const theirs = await t.placeOrder(
      { idempotencyKey: 'tap-rot-2', customerId: 'cust-9', lines: [{ sku: 'ROT-1', quantity: 1 }] },
      OTHER,
    );
    expect(theirs.replayed).toBe(false);
    expect(theirs.order!.id).not.toBe(order!.id);
  });

  it('refuses a key that differs from a configured one in its last character only', async () => {
    const r = await t.gql(`{ __typename }`, {}, `${OLD.slice(0, -1)}X`);
    expect(r.status).toBe(401);
  });
});
