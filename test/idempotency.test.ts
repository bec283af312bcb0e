import { describe, expect, it } from 'vitest';
import { KEYS, startTestApp } from './support/app.js';
import { makeKeysOverdue } from '../kit/holds.js';

const t = await startTestApp();
const count = async (table: string) =>
  (await t.db.query(`SELECT count(*)::int AS n FROM ${table}`)).rows[0].n as number;

describe('placeOrder idempotency', () => {
  it('refuses the same key with different lines (IDEMPOTENCY_KEY_REUSED) and writes nothing', async () => {
    await t.product('IDEM-A', 10);
    await t.product('IDEM-B', 10);
    const first = await t.placeOrder({ idempotencyKey: 'k-1', lines: [{ sku: 'IDEM-A', quantity: 1 }] });
    expect(first.order?.status).toBe('RESERVED');
    const before = {
      orders: await count('orders'),
      keys: await count('idempotency_keys'),
      outbox: await count('outbox'),
      a: await t.inventory('IDEM-A'),
      b: await t.inventory('IDEM-B'),
    };
    for (const lines of [
      [{ sku: 'IDEM-A', quantity: 2 }],
      [{ sku: 'IDEM-B', quantity: 1 }],
      [
        { sku: 'IDEM-A', quantity: 1 },
        { sku: 'IDEM-B', quantity: 1 },
      ],
    ]) {
      const r = await t.placeOrder({ idempotencyKey: 'k-1', lines });
      expect(r.order).toBeNull();
      expect(r.replayed).toBe(false);
      expect(r.userErrors).toEqual([
        expect.objectContaining({ code: 'IDEMPOTENCY_KEY_REUSED', field: ['input', 'idempotencyKey'] }),
      ]);
    }
    expect({
      orders: await count('orders'),
      keys: await count('idempotency_keys'),
      outbox: await count('outbox'),
      a: await t.inventory('IDEM-A'),
      b: await t.inventory('IDEM-B'),
    }).toEqual(before);
  });

  it('replays a finished order on retry: replayed true, same order, no new claim', async () => {
    await t.product('IDEM-C', 5);
    const first = await t.placeOrder({ idempotencyKey: 'k-2', lines: [{ sku: 'IDEM-C', quantity: 2 }] });
    const inv = await t.inventory('IDEM-C');
    for (let i = 0; i < 3; i++) {
      const again = await t.placeOrder({ idempotencyKey: 'k-2', lines: [{ sku: 'IDEM-C', quantity: 2 }] });
      expect(again.replayed).toBe(true);
      expect(again.order).toEqual(first.order);
      expect(again.userErrors).toEqual([]);
    }
    expect(await t.inventory('IDEM-C')).toEqual(inv);
  });

  it('treats the same cart in another line order as the same request', async () => {
    await t.product('IDEM-D', 5);
    await t.product('IDEM-E', 5);
    const first = await t.placeOrder({
      idempotencyKey: 'k-3',
      lines: [
        { sku: 'IDEM-D', quantity: 1 },
        { sku: 'IDEM-E', quantity: 1 },
      ],
    });
    const again = await t.placeOrder({
      idempotencyKey: 'k-3',
      lines: [
        { sku: 'IDEM-E', quantity: 1 },
        { sku: 'IDEM-D', quantity: 1 },
      ],
    });
    expect(again).toMatchObject({ replayed: true, order: { id: first.order!.id } });
  });

  it('scopes keys to the API client and the customer', async () => {
    await t.product('IDEM-F', 10);
    const line = [{ sku: 'IDEM-F', quantity: 1 }];
    const a = await t.placeOrder({ idempotencyKey: 'shared', customerId: 'alice', lines: line });
    const b = await t.placeOrder({ idempotencyKey: 'shared', customerId: 'bob', lines: line });
    const c = await t.placeOrder({ idempotencyKey: 'shared', customerId: 'alice', lines: line }, KEYS.storefront2);
    expect(new Set([a.order!.id, b.order!.id, c.order!.id]).size).toBe(3);
    expect([a, b, c].every((r) => !r.replayed)).toBe(true);
    expect((await t.inventory('IDEM-F')).reserved).toBe(3);
  });

  it('keeps the first answer after the stock changes: a replayed rejection stays rejected after a restock', async () => {
    await t.product('IDEM-G', 0);
    const first = await t.placeOrder({ idempotencyKey: 'k-4', lines: [{ sku: 'IDEM-G', quantity: 1 }] });
    expect(first.userErrors[0]?.code).toBe('SOLD_OUT');
    await t.gql(`mutation { restock(input: { sku: "IDEM-G", quantity: 5 }) { userErrors { code } } }`, {}, KEYS.admin);
    const again = await t.placeOrder({ idempotencyKey: 'k-4', lines: [{ sku: 'IDEM-G', quantity: 1 }] });
    expect(again).toMatchObject({ replayed: true, order: { id: first.order!.id, status: 'REJECTED' } });
    expect(again.userErrors[0]?.code).toBe('SOLD_OUT');
    expect(await t.inventory('IDEM-G')).toEqual({ available: 5, reserved: 0, sold: 0 });
  });

  it('deletes key rows past retention but keeps their orders', async () => {
    await t.product('IDEM-H', 5);
    const r = await t.placeOrder({ idempotencyKey: 'old-key', lines: [{ sku: 'IDEM-H', quantity: 1 }] });
    await makeKeysOverdue(t.db, ['old-key']);
    const { cleanupKeysOnce } = await import('../orders/sweeper.js');
    expect(await cleanupKeysOnce(t.db, t.metrics)).toBe(1);
    expect((await t.db.query(`SELECT 1 FROM idempotency_keys WHERE key = 'old-key'`)).rowCount).toBe(0);
    const o = await t.gql(`query($id: ID!) { order(id: $id) { id status } }`, { id: r.order!.id });
    expect(o.body.data.order).toEqual({ id: r.order!.id, status: 'RESERVED' });
  });
});
