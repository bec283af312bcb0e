import { describe, expect, it } from 'vitest';
import { startTestApp } from './support/app.js';

const t = await startTestApp();

describe('the database enforces the invariants', () => {
  it('refuses a direct SQL update that would make available negative (I1)', async () => {
    await t.product('CK-1', 1);
    await expect(t.db.query(`UPDATE inventory SET available = available - 2 WHERE sku = 'CK-1'`)).rejects.toMatchObject(
      {
        code: '23514',
        constraint: 'inventory_available_check',
      },
    );
    await expect(t.db.query(`UPDATE inventory SET reserved = -1 WHERE sku = 'CK-1'`)).rejects.toMatchObject({
      code: '23514',
    });
    await expect(t.db.query(`UPDATE inventory SET sold = -1 WHERE sku = 'CK-1'`)).rejects.toMatchObject({
      code: '23514',
    });
    expect(await t.inventory('CK-1')).toEqual({ available: 1, reserved: 0, sold: 0 });
  });

  it('refuses a second key row for the same client, customer and key (I4)', async () => {
    const insert = `INSERT INTO idempotency_keys (client_id, customer_id, key, request_hash, state, expires_at) VALUES ('c', 'u', 'k', 'h', 'DONE', now())`;
    await t.db.query(insert);
    await expect(t.db.query(insert)).rejects.toMatchObject({ code: '23505' });
  });

  it('refuses zero or negative quantities on lines and holds', async () => {
    await t.product('CK-2', 5);
    const { order } = await t.placeOrder({ idempotencyKey: 'ck-2', lines: [{ sku: 'CK-2', quantity: 1 }] });
    await expect(
      t.db.query(`UPDATE order_lines SET quantity = 0 WHERE order_id = $1`, [order!.id]),
    ).rejects.toMatchObject({ code: '23514' });
    await expect(
      t.db.query(`UPDATE reservations SET quantity = 0 WHERE order_id = $1`, [order!.id]),
    ).rejects.toMatchObject({ code: '23514' });
  });

  it('processes an event id once per source (I8)', async () => {
    const insert = `INSERT INTO processed_events (source, event_id) VALUES ('sandbox', 'evt_1')`;
    await t.db.query(insert);
    await expect(t.db.query(insert)).rejects.toMatchObject({ code: '23505' });
  });
});
