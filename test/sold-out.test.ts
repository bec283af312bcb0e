// Sold-out answers are cheap (docs/database.md, prepare_order): a line the stock cannot cover at a glance is refused
// before any hold, reservation or claim, yet the key row, the REJECTED order and its lines are written, so the same key
// replays the same answer. No order-status event: the order is born final, and its id is first known from the answer.
import { describe, expect, it } from 'vitest';
import { ORDER_FIELDS, startTestApp } from './support/app.js';

const t = await startTestApp({ maxActiveHolds: 2 });

describe('a sold-out answer', () => {
  it('takes no hold slot: a buyer whose slots are all taken is told SOLD_OUT, not HOLD_LIMIT', async () => {
    await t.product('SO-OPEN', 10);
    await t.product('SO-GONE', 0);
    for (const k of ['so-1', 'so-2'])
      expect(
        (await t.placeOrder({ idempotencyKey: k, customerId: 'full', lines: [{ sku: 'SO-OPEN', quantity: 1 }] })).order
          ?.status,
      ).toBe('RESERVED');
    expect(
      (await t.placeOrder({ idempotencyKey: 'so-3', customerId: 'full', lines: [{ sku: 'SO-OPEN', quantity: 1 }] }))
        .userErrors[0]?.code,
    ).toBe('HOLD_LIMIT');
    const r = await t.placeOrder({
      idempotencyKey: 'so-gone',
      customerId: 'full',
      lines: [{ sku: 'SO-GONE', quantity: 1 }],
    });
    expect(r).toMatchObject({ replayed: false, order: { status: 'REJECTED', rejection: { code: 'SOLD_OUT' } } });
    expect(r.userErrors[0]).toMatchObject({ code: 'SOLD_OUT', sku: 'SO-GONE', field: ['input', 'lines', '0'] });
  });

  it('is recorded like any rejection: the same key replays it, the order reads back, and no order-status event is written for it', async () => {
    await t.product('SO-SHORT', 1);
    const input = { idempotencyKey: 'short-1', customerId: 'c-short', lines: [{ sku: 'SO-SHORT', quantity: 3 }] };
    const first = await t.placeOrder(input);
    expect(first.userErrors[0]).toMatchObject({
      code: 'INSUFFICIENT_STOCK',
      sku: 'SO-SHORT',
      message: 'not enough SO-SHORT left for 3',
    });
    const again = await t.placeOrder(input);
    expect(again).toMatchObject({ replayed: true, order: { id: first.order!.id, status: 'REJECTED' } });
    expect(again.userErrors[0]?.code).toBe('INSUFFICIENT_STOCK');
    const read = await t.gql(
      `query($id: ID!) { order(id: $id) { status lines { sku quantity } rejection { code sku } } }`,
      { id: first.order!.id },
    );
    expect(read.body.data.order).toEqual({
      status: 'REJECTED',
      lines: [{ sku: 'SO-SHORT', quantity: 3 }],
      rejection: { code: 'INSUFFICIENT_STOCK', sku: 'SO-SHORT' },
    });
    const { rows } = await t.db.query(
      `SELECT (SELECT count(*)::int FROM reservations WHERE order_id = $1) AS holds,
              (SELECT array_agg(payload->>'status') FROM outbox WHERE topic = 'order_status' AND aggregate_key = $1::text) AS events,
              (SELECT count(*)::int FROM idempotency_keys WHERE order_id = $1) AS keys`,
      [first.order!.id],
    );
    expect(rows[0]).toEqual({ holds: 0, events: null, keys: 1 });
    expect(await t.inventory('SO-SHORT')).toEqual({ available: 1, reserved: 0, sold: 0 });
  });

  it('in a coalesced batch: answered in short by place_orders, and each answer is the order as it reads back', async () => {
    await t.product('SO-STORM', 1, 1250);
    await t.placeOrder({ idempotencyKey: 'storm-0', customerId: 'storm-0', lines: [{ sku: 'SO-STORM', quantity: 1 }] }); // the last unit
    const batchCount = async () =>
      (await t.metrics.claimBatchSize.get()).values.find((v) => v.metricName === 'lastunit_claim_batch_size_count')
        ?.value ?? 0;
    const before = await batchCount();
    const inputs = Array.from({ length: 12 }, (_, i) => ({
      idempotencyKey: `storm-${i + 1}`,
      customerId: `storm-${i + 1}`,
      lines: [{ sku: 'SO-STORM', quantity: 1 + (i % 2) }],
    }));
    const answers = await Promise.all(inputs.map((input) => t.placeOrder(input)));
    expect((await batchCount()) - before).toBeLessThan(inputs.length); // coalesced: fewer transactions than requests
    for (const [i, a] of answers.entries()) {
      expect(a.userErrors.map((e) => e.code)).toEqual(['SOLD_OUT']);
      const read = await t.gql(`query($id: ID!) { order(id: $id) { ${ORDER_FIELDS} } }`, { id: a.order!.id });
      expect(read.body.data.order, inputs[i]!.idempotencyKey).toEqual(a.order); // every field, dates and amounts included
      expect(a.order).toMatchObject({
        customerId: inputs[i]!.customerId,
        total: { amount: 1250 * inputs[i]!.lines[0]!.quantity, currencyCode: 'USD' },
      });
      expect((await t.placeOrder(inputs[i]!)).order).toEqual(a.order); // and the same key replays it
    }
    // the short answer itself (what the caller builds the order from)
    const { rows } = await t.db.query(`SELECT place_orders($1::jsonb, 600, 24, 0) AS r`, [
      JSON.stringify([
        {
          clientId: 'c-short',
          customerId: 'x',
          key: 'storm-sql',
          hash: 'h',
          lines: [{ sku: 'SO-STORM', quantity: 1 }],
          buyer: null,
          tokenHash: null,
        },
      ]),
    ]);
    expect(rows[0].r).toEqual([
      {
        kind: 'refused',
        id: expect.any(String),
        rejection: { code: 'SOLD_OUT', sku: 'SO-STORM', message: 'SO-STORM is sold out' },
        unitAmount: 1250,
        currency: 'USD',
        at: expect.any(String),
      },
    ]);
  });
});
