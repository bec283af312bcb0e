import { describe, expect, it } from 'vitest';
import { startTestApp } from './support/app.js';

const t = await startTestApp();

describe('placeOrder', () => {
  it('gives the last unit to exactly one of 200 concurrent buyers', async () => {
    await t.product('LAST', 1);
    const answers = await Promise.all(
      Array.from({ length: 200 }, (_, i) =>
        t.placeOrder({ idempotencyKey: `last-${i}`, customerId: `buyer-${i}`, lines: [{ sku: 'LAST', quantity: 1 }] }),
      ),
    );
    const reserved = answers.filter((a) => a.order?.status === 'RESERVED');
    const soldOut = answers.filter((a) => a.userErrors[0]?.code === 'SOLD_OUT');
    expect(reserved).toHaveLength(1);
    expect(soldOut).toHaveLength(199);
    for (const a of soldOut) {
      expect(a.order?.status).toBe('REJECTED');
      expect(a.userErrors[0]).toMatchObject({ code: 'SOLD_OUT', sku: 'LAST' });
    }
    expect(await t.inventory('LAST')).toEqual({ available: 0, reserved: 1, sold: 0 });
    // rejected orders hold nothing, and whatever others hear about them says REJECTED (one refused at a glance, born
    // final, has no status event at all)
    const { rows } = await t.db.query(
      `SELECT o.status, count(DISTINCT o.id)::int AS orders, count(DISTINCT r.id)::int AS holds,
              coalesce(bool_and(e.payload->>'status' = o.status), true) AS event_says_status
         FROM orders o JOIN order_lines l ON l.order_id = o.id AND l.sku = 'LAST'
         LEFT JOIN reservations r ON r.order_id = o.id
         LEFT JOIN outbox e ON e.topic = 'order_status' AND e.aggregate_key = o.id::text
        GROUP BY o.status ORDER BY o.status`,
    );
    expect(rows).toEqual([
      { status: 'REJECTED', orders: 199, holds: 0, event_says_status: true },
      { status: 'RESERVED', orders: 1, holds: 1, event_says_status: true },
    ]);
    const { rows: avail } = await t.db.query(
      `SELECT payload FROM outbox WHERE topic = 'availability' AND aggregate_key = 'LAST'`,
    );
    expect(avail.map((r) => r.payload)).toEqual([
      expect.objectContaining({ sku: 'LAST', available: 0, soldOut: true }),
    ]);
  });

  it('never hands out more than 100 units to 1,000 concurrent buyers of 1 to 3, and refuses nobody it could have served', async () => {
    await t.product('HUNDRED', 100);
    const wants = Array.from({ length: 1000 }, (_, i) => 1 + (i % 3));
    const answers = await Promise.all(
      wants.map((q, i) =>
        t.placeOrder({ idempotencyKey: `h-${i}`, customerId: `b-${i}`, lines: [{ sku: 'HUNDRED', quantity: q }] }),
      ),
    );
    const won = answers.map((a, i) => (a.order?.status === 'RESERVED' ? wants[i]! : 0));
    const handedOut = won.reduce((s, q) => s + q, 0);
    const inv = await t.inventory('HUNDRED');
    expect(handedOut).toBeLessThanOrEqual(100);
    expect(inv.reserved).toBe(handedOut);
    expect(inv.available + inv.reserved + inv.sold).toBe(100);
    const { rows } = await t.db.query(
      `SELECT coalesce(sum(quantity), 0)::int AS q FROM reservations WHERE sku = 'HUNDRED' AND state = 'HELD'`,
    );
    expect(rows[0].q).toBe(inv.reserved);
    answers.forEach((a, i) => {
      if (a.order?.status !== 'RESERVED') {
        expect(['SOLD_OUT', 'INSUFFICIENT_STOCK']).toContain(a.userErrors[0]?.code);
        // refused only if, even at the end, there were not enough units left for this buyer
        expect(wants[i]!).toBeGreaterThan(inv.available);
      }
    });
  });

  it('makes one order of 50 concurrent requests with the same key and input', async () => {
    await t.product('SAMEKEY', 10);
    const input = { idempotencyKey: 'tap-once', customerId: 'phone-user', lines: [{ sku: 'SAMEKEY', quantity: 2 }] };
    const answers = await Promise.all(Array.from({ length: 50 }, () => t.placeOrder(input)));
    const ids = new Set(answers.map((a) => a.order?.id));
    expect(ids.size).toBe(1);
    expect([...ids][0]).toBeTruthy();
    expect(answers.filter((a) => !a.replayed)).toHaveLength(1);
    for (const a of answers) expect(a.order?.status).toBe('RESERVED');
    const { rows } = await t.db.query(`SELECT count(*)::int AS n FROM order_lines WHERE sku = 'SAMEKEY'`);
    expect(rows[0].n).toBe(1);
    expect(await t.inventory('SAMEKEY')).toEqual({ available: 8, reserved: 2, sold: 0 });
  });

  it('lets concurrent two-line carts listing the same SKUs in opposite orders finish without a fault, units conserved', async () => {
    await t.product('PAIR-A', 150);
    await t.product('PAIR-B', 150);
    const answers = await Promise.all(
      Array.from({ length: 200 }, (_, i) =>
        t.placeOrder({
          idempotencyKey: `pair-${i}`,
          customerId: `p-${i}`,
          lines:
            i % 2
              ? [
                  { sku: 'PAIR-A', quantity: 1 },
                  { sku: 'PAIR-B', quantity: 1 },
                ]
              : [
                  { sku: 'PAIR-B', quantity: 1 },
                  { sku: 'PAIR-A', quantity: 1 },
                ],
        }),
      ),
    ); // t.placeOrder throws on any GraphQL error or non-200
    const won = answers.filter((a) => a.order?.status === 'RESERVED').length;
    expect(won).toBe(150);
    for (const sku of ['PAIR-A', 'PAIR-B']) {
      const inv = await t.inventory(sku);
      expect(inv).toEqual({ available: 0, reserved: 150, sold: 0 });
    }
  });

  it('rolls back every line when one line cannot be claimed, and records the rejection', async () => {
    await t.product('CART-A', 5);
    await t.product('CART-Z', 1);
    const r = await t.placeOrder({
      idempotencyKey: 'cart-1',
      lines: [
        { sku: 'CART-A', quantity: 2 },
        { sku: 'CART-Z', quantity: 2 },
      ],
    });
    expect(r.order?.status).toBe('REJECTED');
    expect(r.userErrors[0]).toMatchObject({
      code: 'INSUFFICIENT_STOCK',
      sku: 'CART-Z',
      field: ['input', 'lines', '1'],
    });
    expect(await t.inventory('CART-A')).toEqual({ available: 5, reserved: 0, sold: 0 });
    expect(await t.inventory('CART-Z')).toEqual({ available: 1, reserved: 0, sold: 0 });
    const again = await t.placeOrder({
      idempotencyKey: 'cart-1',
      lines: [
        { sku: 'CART-Z', quantity: 2 },
        { sku: 'CART-A', quantity: 2 },
      ],
    });
    expect(again).toMatchObject({ replayed: true, order: { id: r.order!.id, status: 'REJECTED' } });
    expect(again.userErrors[0]?.code).toBe('INSUFFICIENT_STOCK');
  });

  it('describes the order it placed: lines, prices, total and a hold that expires after the hold TTL', async () => {
    await t.product('DESCR', 3, 1250);
    const before = Date.now();
    const r = await t.placeOrder({
      idempotencyKey: 'descr',
      customerId: 'c-42',
      lines: [{ sku: 'DESCR', quantity: 2 }],
    });
    const o = r.order as any;
    expect(o).toMatchObject({
      status: 'RESERVED',
      customerId: 'c-42',
      total: { amount: 2500, currencyCode: 'USD' },
      rejection: null,
    });
    expect(o.lines).toEqual([{ sku: 'DESCR', quantity: 2, unitPrice: { amount: 1250 } }]);
    expect(o.reservation.state).toBe('HELD');
    const ttl = new Date(o.reservation.expiresAt).getTime() - before;
    expect(ttl).toBeGreaterThan(590_000);
    expect(ttl).toBeLessThan(610_000);
    const p = await t.gql(`{ product(sku: "DESCR") { availability { available soldOut } } }`);
    expect(p.body.data.product.availability).toEqual({ available: 1, soldOut: false });
  });

  it('shows a held last unit as sold out to everyone else', async () => {
    await t.product('HELDLAST', 1);
    await t.placeOrder({ idempotencyKey: 'hl', lines: [{ sku: 'HELDLAST', quantity: 1 }] });
    const p = await t.gql(`{ products(skus: ["HELDLAST", "NOPE"]) { sku availability { available soldOut } } }`);
    expect(p.body.data.products).toEqual([{ sku: 'HELDLAST', availability: { available: 0, soldOut: true } }, null]);
  });
});
