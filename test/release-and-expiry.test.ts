import { describe, expect, it } from 'vitest';
import { KEYS, startTestApp } from './support/app.js';
import { sweepOnce } from '../orders/sweeper.js';
import { makeHoldsOverdue } from '../kit/holds.js';

const t = await startTestApp({ poolSize: 30 });
const expireNow = (orderIds: string[]) => makeHoldsOverdue(t.db, { orderIds });

describe('releaseReservation', () => {
  it('returns the units once when called 20 times concurrently; every call answers the same order', async () => {
    await t.product('REL-1', 3);
    const { order } = await t.placeOrder({ idempotencyKey: 'rel-1', lines: [{ sku: 'REL-1', quantity: 2 }] });
    const answers = await Promise.all(Array.from({ length: 20 }, () => t.release(order!.id)));
    for (const a of answers) expect(a).toMatchObject({ order: { id: order!.id, status: 'CANCELLED' }, userErrors: [] });
    expect(await t.inventory('REL-1')).toEqual({ available: 3, reserved: 0, sold: 0 });
    const { rows } = await t.db.query(`SELECT state FROM reservations WHERE order_id = $1`, [order!.id]);
    expect(rows).toEqual([{ state: 'RELEASED' }]);
  });

  it('answers ALREADY_FINAL for a confirmed order and leaves its units sold', async () => {
    await t.product('REL-2', 1);
    const { order } = await t.placeOrder({ idempotencyKey: 'rel-2', lines: [{ sku: 'REL-2', quantity: 1 }] });
    // confirm it the way a payment will: reserved -> sold in one transaction
    await t.db.query(`UPDATE orders SET status = 'CONFIRMED' WHERE id = $1`, [order!.id]);
    await t.db.query(`UPDATE reservations SET state = 'SOLD' WHERE order_id = $1`, [order!.id]);
    await t.db.query(`UPDATE inventory SET reserved = reserved - 1, sold = sold + 1 WHERE sku = 'REL-2'`);
    const r = await t.release(order!.id);
    expect(r.userErrors.map((e) => e.code)).toEqual(['ALREADY_FINAL']);
    expect(r.order?.status).toBe('CONFIRMED');
    expect(await t.inventory('REL-2')).toEqual({ available: 0, reserved: 0, sold: 1 });
  });

  it("answers NOT_FOUND for another client's order or a malformed id, and moves nothing", async () => {
    await t.product('REL-3', 1);
    const { order } = await t.placeOrder({ idempotencyKey: 'rel-3', lines: [{ sku: 'REL-3', quantity: 1 }] });
    const other = await t.release(order!.id, KEYS.storefront2);
    expect(other).toEqual({ order: null, userErrors: [expect.objectContaining({ code: 'NOT_FOUND' })] });
    const bad = await t.release('not-a-uuid');
    expect(bad.userErrors[0]?.code).toBe('NOT_FOUND');
    expect(await t.inventory('REL-3')).toEqual({ available: 0, reserved: 1, sold: 0 });
  });

  it('releases a multi-line order in one step', async () => {
    await t.product('REL-4A', 2);
    await t.product('REL-4B', 2);
    const { order } = await t.placeOrder({
      idempotencyKey: 'rel-4',
      lines: [
        { sku: 'REL-4B', quantity: 2 },
        { sku: 'REL-4A', quantity: 1 },
      ],
    });
    await t.release(order!.id);
    expect(await t.inventory('REL-4A')).toEqual({ available: 2, reserved: 0, sold: 0 });
    expect(await t.inventory('REL-4B')).toEqual({ available: 2, reserved: 0, sold: 0 });
  });
});

describe('expiry', () => {
  it('expires a hold past expires_at: the order reads EXPIRED and the unit is on sale again', async () => {
    await t.product('EXP-1', 1);
    const { order } = await t.placeOrder({ idempotencyKey: 'exp-1', lines: [{ sku: 'EXP-1', quantity: 1 }] });
    expect(await sweepOnce(t.db, t.metrics)).toBe(0); // not due yet
    await expireNow([order!.id]);
    expect(await sweepOnce(t.db, t.metrics)).toBeGreaterThanOrEqual(1);
    const o = await t.gql(`query($id: ID!) { order(id: $id) { status reservation { state } } }`, { id: order!.id });
    expect(o.body.data.order).toEqual({ status: 'EXPIRED', reservation: { state: 'EXPIRED' } });
    expect(await t.inventory('EXP-1')).toEqual({ available: 1, reserved: 0, sold: 0 });
    const after = await t.release(order!.id);
    expect(after).toMatchObject({ order: { status: 'EXPIRED' }, userErrors: [] });
    expect(await t.inventory('EXP-1')).toEqual({ available: 1, reserved: 0, sold: 0 });
  });

  it('returns the units once when a release races the sweeper on an expired hold (50 rounds)', async () => {
    await t.product('EXP-RACE', 50);
    for (let i = 0; i < 50; i++) {
      const { order } = await t.placeOrder({ idempotencyKey: `race-${i}`, lines: [{ sku: 'EXP-RACE', quantity: 1 }] });
      await expireNow([order!.id]);
      const [rel] = await Promise.all([t.release(order!.id), sweepOnce(t.db, t.metrics), sweepOnce(t.db, t.metrics)]);
      expect(['CANCELLED', 'EXPIRED']).toContain(rel.order?.status);
      expect(await t.inventory('EXP-RACE')).toEqual({ available: 50, reserved: 0, sold: 0 });
    }
  });

  it('releases each of 500 expired holds exactly once with two sweepers running at once', async () => {
    await t.product('EXP-500', 500);
    await t.product('EXP-500B', 500);
    const ids: string[] = [];
    for (let i = 0; i < 500; i += 50) {
      const batch = await Promise.all(
        Array.from({ length: 50 }, (_, j) =>
          t.placeOrder({
            idempotencyKey: `e500-${i + j}`,
            customerId: `e500-c${i + j}`, // 500 shoppers: one customer may hold only MAX_ACTIVE_HOLDS at once
            lines:
              (i + j) % 2
                ? [
                    { sku: 'EXP-500', quantity: 1 },
                    { sku: 'EXP-500B', quantity: 1 },
                  ]
                : [{ sku: 'EXP-500', quantity: 1 }],
          }),
        ),
      );
      ids.push(...batch.map((b) => b.order!.id));
    }
    await expireNow(ids);
    const before = Number((await t.metrics.reservationsExpired.get()).values[0]?.value ?? 0);
    const [a, b] = await Promise.all([sweepOnce(t.db, t.metrics, 25), sweepOnce(t.db, t.metrics, 25)]);
    expect(a + b).toBe(500);
    expect(Number((await t.metrics.reservationsExpired.get()).values[0]?.value) - before).toBe(500);
    expect(await t.inventory('EXP-500')).toEqual({ available: 500, reserved: 0, sold: 0 });
    expect(await t.inventory('EXP-500B')).toEqual({ available: 500, reserved: 0, sold: 0 });
    const { rows } = await t.db.query(
      `SELECT status, count(*)::int AS n FROM orders WHERE id = ANY ($1::uuid[]) GROUP BY status`,
      [ids],
    );
    expect(rows).toEqual([{ status: 'EXPIRED', n: 500 }]);
  });

  it('writes an availability and an order-status outbox event with each release (I9), none for the placement', async () => {
    await t.product('EXP-OB', 2);
    const { order } = await t.placeOrder({ idempotencyKey: 'ob-1', lines: [{ sku: 'EXP-OB', quantity: 2 }] });
    await t.release(order!.id);
    const { rows } = await t.db.query(
      `SELECT topic, payload FROM outbox WHERE aggregate_key IN ('EXP-OB', $1) ORDER BY id`,
      [order!.id],
    );
    // the placement's own status is not relayed: the order's id is first known from placeOrder's answer
    expect(rows.map((r) => [r.topic, r.payload.available ?? r.payload.status])).toEqual([
      ['availability', 0],
      ['availability', 2],
      ['order_status', 'CANCELLED'],
    ]);
    expect(rows[1].payload.version).toBeGreaterThan(rows[0].payload.version);
  });
});
