import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { bucketLanes, createBatchLanes } from '../orders/claim-batcher.js';
import { startTestApp } from './support/app.js';
import { placeOrdersAnswers, toOrder, OrderDocument } from '../db/orders-store.js';

type BatchRequest = { customerId: string; lines: { sku: string; quantity: number }[] };
/** place_orders itself (no retry: a deadlock would surface), its answers read as the server reads them */
const placeBatch = async (batch: BatchRequest[], maxHolds = 0) =>
  placeOrdersAnswers(
    batch,
    (
      await t.db.query(
        `SELECT place_orders(p_requests => $1::jsonb, p_hold_ttl_seconds => 600, p_retention_hours => 24, p_max_holds => $2) AS r`,
        [JSON.stringify(batch), maxHolds],
      )
    ).rows[0].r,
  ) as any[];

// The batcher's lanes are a pure concurrency utility: these first cases drive them with a recording runner (no database).
function recorder(fail?: (req: number) => boolean) {
  const batches: number[][] = [];
  const run = async (reqs: number[]) => {
    batches.push(reqs);
    await new Promise((r) => setTimeout(r, 5));
    if (fail && reqs.some(fail)) throw new Error(`fault in ${reqs.join(',')}`);
    return reqs.map((r) => r * 10);
  };
  return { batches, run };
}

describe('claim batcher', () => {
  it('sends a lone request at once and coalesces the ones that arrive while a batch is in flight', async () => {
    const { batches, run } = recorder();
    const submit = createBatchLanes(run);
    const answers = await Promise.all([1, 2, 3, 4, 5].map((n) => submit('SKU', `k${n}`, n)));
    expect(answers).toEqual([10, 20, 30, 40, 50]);
    expect(batches).toEqual([[1], [2, 3, 4, 5]]);
  });

  it('with maxInFlight 2, sends the next batch while one is in flight and coalesces behind both', async () => {
    const { batches, run } = recorder();
    const submit = createBatchLanes(run, { maxInFlight: 2 });
    const answers = await Promise.all([1, 2, 3, 4, 5].map((n) => submit('SKU', `k${n}`, n)));
    expect(answers).toEqual([10, 20, 30, 40, 50]);
    expect(batches).toEqual([[1], [2], [3, 4, 5]]);
  });

  it('keeps lanes (SKUs) apart', async () => {
    const { batches, run } = recorder();
    const submit = createBatchLanes(run);
    await Promise.all([submit('A', 'a1', 1), submit('B', 'b1', 2), submit('A', 'a2', 3), submit('B', 'b2', 4)]);
    expect(batches).toEqual([[1], [2], [3], [4]]);
  });

  it('never puts two requests with the same idempotency scope in one batch', async () => {
    const { batches, run } = recorder();
    const submit = createBatchLanes(run);
    await Promise.all([submit('S', 'x', 1), submit('S', 'same', 2), submit('S', 'same', 3), submit('S', 'y', 4)]);
    expect(batches).toEqual([[1], [2, 4], [3]]);
  });

  it('caps a batch at maxBatch', async () => {
    const { batches, run } = recorder();
    const submit = createBatchLanes(run, { maxBatch: 2 });
    await Promise.all([1, 2, 3, 4, 5, 6].map((n) => submit('S', `k${n}`, n)));
    expect(batches.map((b) => b.length)).toEqual([1, 2, 2, 1]);
  });

  it("fails a whole batch at once when the failure is not one request's (isolate says no)", async () => {
    const { batches, run } = recorder((r) => r === 3);
    const submit = createBatchLanes(run, { isolate: () => false });
    const settled = await Promise.allSettled([1, 2, 3, 4].map((n) => submit('S', `k${n}`, n)));
    expect(settled.map((s) => s.status)).toEqual(['fulfilled', 'rejected', 'rejected', 'rejected']);
    expect(batches).toEqual([[1], [2, 3, 4]]);
  });

  it('sends a batch once more whole when told to (LU003: its buckets were held), before going one by one', async () => {
    const batches: number[][] = [];
    let heldFor = 1; // how many more runs of a batch of several find every bucket that could cover it held
    const run = async (reqs: number[]) => {
      batches.push(reqs);
      await new Promise((r) => setTimeout(r, 5));
      if (reqs.length > 1 && heldFor-- > 0) throw Object.assign(new Error('buckets held'), { code: 'LU003' });
      return reqs.map((r) => r * 10);
    };
    const submit = createBatchLanes(run, { again: (err) => (err as { code?: string }).code === 'LU003' });
    expect(await Promise.all([1, 2, 3, 4].map((n) => submit('S', `k${n}`, n)))).toEqual([10, 20, 30, 40]);
    expect(batches).toEqual([[1], [2, 3, 4], [2, 3, 4]]);
    // once more only: a batch handed back twice goes one by one
    heldFor = 2;
    expect(await Promise.all([5, 6, 7].map((n) => submit('T', `k${n}`, n)))).toEqual([50, 60, 70]);
    expect(batches.slice(3)).toEqual([[5], [6, 7], [6, 7], [6], [7]]);
  });

  it('isolates a fault: the batch is repeated one by one and only the faulty request fails', async () => {
    const { batches, run } = recorder((r) => r === 3);
    const submit = createBatchLanes(run);
    const settled = await Promise.allSettled([1, 2, 3, 4].map((n) => submit('S', `k${n}`, n)));
    expect(settled.map((s) => s.status)).toEqual(['fulfilled', 'fulfilled', 'rejected', 'fulfilled']);
    expect(batches).toEqual([[1], [2, 3, 4], [2], [3], [4]]);
  });
});

const t = await startTestApp();

describe('placeOrder with coalesced claims (real pipeline)', () => {
  it('places concurrent single-SKU orders in shared transactions, each claimed and answered on its own', async () => {
    await t.product('BATCH-1', 30);
    const answers = await Promise.all(
      Array.from({ length: 60 }, (_, i) =>
        t.placeOrder({ idempotencyKey: `b-${i}`, customerId: `c-${i}`, lines: [{ sku: 'BATCH-1', quantity: 1 }] }),
      ),
    );
    expect(answers.filter((a) => a.order?.status === 'RESERVED')).toHaveLength(30);
    expect(answers.filter((a) => a.userErrors[0]?.code === 'SOLD_OUT')).toHaveLength(30);
    expect(new Set(answers.map((a) => a.order!.id)).size).toBe(60);
    const sizes = (await t.metrics.claimBatchSize.get()).values.find(
      (v) => v.metricName === 'lastunit_claim_batch_size_count',
    );
    const sum = (await t.metrics.claimBatchSize.get()).values.find(
      (v) => v.metricName === 'lastunit_claim_batch_size_sum',
    );
    expect(sum!.value).toBe(60);
    expect(sizes!.value).toBeLessThan(60); // at least one batch held more than one order
    expect(await t.inventory('BATCH-1')).toEqual({ available: 0, reserved: 30, sold: 0 });
    const { rows } = await t.db.query(
      `SELECT count(*)::int AS n FROM reservations WHERE sku = 'BATCH-1' AND state = 'HELD'`,
    );
    expect(rows[0].n).toBe(30);
  });

  it('answers a retry that lands in the same moment as its original with the same order', async () => {
    await t.product('BATCH-2', 5);
    const input = { idempotencyKey: 'twin', customerId: 'c', lines: [{ sku: 'BATCH-2', quantity: 1 }] };
    const others = Array.from({ length: 10 }, (_, i) =>
      t.placeOrder({ idempotencyKey: `o-${i}`, customerId: `o-${i}`, lines: [{ sku: 'BATCH-2', quantity: 1 }] }),
    );
    const [a, b] = await Promise.all([t.placeOrder(input), t.placeOrder(input), ...others]);
    expect(a!.order!.id).toBe(b!.order!.id);
    expect([a!.replayed, b!.replayed].sort()).toEqual([false, true]);
    expect(await t.inventory('BATCH-2')).toEqual({ available: 0, reserved: 5, sold: 0 });
  });
});

describe('place_orders lock order', () => {
  it('takes every key row before the inventory row: a batch and a concurrent order holding one of its keys both finish', async () => {
    await t.product('BATCH-DL', 10);
    const args = (key: string) => [
      'c',
      `cust-${key}`,
      key,
      `h-${key}`,
      JSON.stringify([{ sku: 'BATCH-DL', quantity: 1 }]),
      600,
      24,
    ];
    // T2 (another instance's retry of k2) has inserted key k2 and not yet claimed.
    const t2 = await t.db.pool.connect();
    try {
      await t2.query('BEGIN');
      await t2.query('SELECT prepare_order($1, $2, $3, $4, $5::jsonb, $6, $7)', args('k2'));
      // The batch [k1, k2] must wait for k2 BEFORE it locks BATCH-DL's inventory row...
      const batch = placeBatch(
        ['k1', 'k2'].map((k) => ({
          clientId: 'c',
          customerId: `cust-${k}`,
          key: k,
          hash: `h-${k}`,
          lines: [{ sku: 'BATCH-DL', quantity: 1 }],
        })),
      );
      await new Promise((r) => setTimeout(r, 300));
      // ...so T2 can claim that row now (before the fix this was a deadlock: 40P01).
      await t2.query(
        `UPDATE inventory SET available = available - 1, reserved = reserved + 1 WHERE sku = 'BATCH-DL' AND available >= 1`,
      );
      await t2.query('COMMIT');
      expect((await batch).map((x) => x.kind)).toEqual(['placed', 'replayed']);
    } finally {
      t2.release();
    }
  });
});

describe('place_orders set-based sales', () => {
  it('prepares plain sales with one statement per table, claims them with one conditional UPDATE in arrival order, and refuses the rest with their holds given back', async () => {
    await t.product('SET-1', 3);
    // b4 already holds its two (I14): its request is refused HOLD_LIMIT, its counter unchanged
    await t.db.query(`INSERT INTO buyer_holds (client_id, buyer, active, max_active) VALUES ('c1', 'b4', 2, 2)`);
    const req = (n: number, buyer: string, quantity = 1) => ({
      clientId: 'c1',
      customerId: `cust-${n}`,
      key: `k${n}`,
      hash: `h${n}`,
      lines: [{ sku: 'SET-1', quantity }],
      buyer,
      tokenHash: null,
    });
    const batch = [req(1, 'b1'), req(2, 'b2', 2), req(3, 'b3'), req(4, 'b4'), req(5, 'b5'), req(6, 'b5')]; // b5 twice: per-order path
    const before = await t.db.query(`SELECT coalesce(max(id), 0) AS id FROM outbox`);
    const answers = await placeBatch(batch, 2);
    expect(answers.map((a) => [a.kind, a.order.status, a.order.rejection?.code ?? null])).toEqual([
      ['placed', 'RESERVED', null],
      ['placed', 'RESERVED', null],
      ['rejected', 'REJECTED', 'SOLD_OUT'],
      ['rejected', 'REJECTED', 'HOLD_LIMIT'],
      ['rejected', 'REJECTED', 'SOLD_OUT'],
      ['rejected', 'REJECTED', 'SOLD_OUT'],
    ]);
    expect(answers[1].order).toMatchObject({
      totalAmount: 2000,
      currency: 'USD',
      lines: [{ sku: 'SET-1', quantity: 2, unitAmount: 1000 }],
      reservation: { state: 'HELD' },
    });
    // every answer's order, built from short answers or read whole, is the document order_json reads back, field for field
    for (const a of answers) {
      const { rows: stored } = await t.db.query(`SELECT order_json($1::uuid) AS j`, [a.order.id]);
      expect(a.order).toEqual(toOrder(OrderDocument.parse(stored[0].j)));
    }
    expect(await t.inventory('SET-1')).toEqual({ available: 0, reserved: 3, sold: 0 });
    // what the database says matches every answer: statuses, reservations, key rows
    const ids = answers.map((a) => a.order.id);
    const orders = await t.db.query(
      `SELECT id::text, status, rejection->>'code' AS code FROM orders WHERE id = ANY($1::uuid[])`,
      [ids],
    );
    expect(new Map(orders.rows.map((o) => [o.id, [o.status, o.code]]))).toEqual(
      new Map(answers.map((a) => [a.order.id, [a.order.status, a.order.rejection?.code ?? null]])),
    );
    const held = await t.db.query(
      `SELECT order_id::text AS id, quantity FROM reservations WHERE sku = 'SET-1' AND state = 'HELD' ORDER BY quantity`,
    );
    expect(held.rows).toEqual([
      { id: ids[0], quantity: 1 },
      { id: ids[1], quantity: 2 },
    ]);
    const keys = await t.db.query(
      `SELECT key, order_id::text AS id FROM idempotency_keys WHERE client_id = 'c1' AND key = ANY($1) ORDER BY key`,
      [batch.map((b) => b.key)],
    );
    expect(keys.rows.map((k) => k.id)).toEqual(ids);
    // I14: the sold buyers count one hold each, the one refused for stock was given its hold back, b4 is unchanged
    const holds = await t.db.query(`SELECT buyer, active FROM buyer_holds WHERE client_id = 'c1' ORDER BY buyer`);
    expect(holds.rows).toEqual([
      { buyer: 'b1', active: 1 },
      { buyer: 'b2', active: 1 },
      { buyer: 'b4', active: 2 },
    ]);
    // I9: one availability event for the batch's plain claim (the newest count), and no order-status event on either
    // path (b5's two went the per-order way: prepared, then refused by claim_order): each order's id is first known
    // from its answer, so no orderStatusChanged subscriber can be waiting for its first status
    const events = await t.db.query(`SELECT topic, aggregate_key, payload FROM outbox WHERE id > $1 ORDER BY id`, [
      before.rows[0].id,
    ]);
    const availability = events.rows.filter((e) => e.topic === 'availability' && e.aggregate_key === 'SET-1');
    expect(availability.map((e) => [e.payload.available, e.payload.soldOut])).toEqual([[0, true]]);
    const statuses = events.rows
      .filter((e) => e.topic === 'order_status')
      .map((e) => [e.aggregate_key, e.payload.status] as const);
    expect(statuses).toEqual([]);
  });

  it('logs one event per order of a batch, set-based, with the document order_json reads after commit; the trigger logs every other order and every later change', async () => {
    await t.product('EVB-1', 3);
    await t.product('EVB-2', 5);
    await t.product('EVB-3', 5);
    const req = (n: number, lines: { sku: string; quantity: number }[]) => ({
      clientId: 'cev',
      customerId: `cust-${n}`,
      key: `k${n}`,
      hash: `h${n}`,
      lines,
      buyer: null,
      tokenHash: null,
    });
    const one = (n: number, quantity = 1) => req(n, [{ sku: 'EVB-1', quantity }]);
    const eventsOf = async (ids: string[]) =>
      (
        await t.db.query(
          `SELECT e.order_id::text AS id, e.type, e.sequence::int AS sequence, e.data = order_json(e.order_id) AS current
             FROM events e WHERE e.order_id = ANY($1::uuid[]) ORDER BY e.n`,
          [ids],
        )
      ).rows;
    // granted, granted, refused under the lock (the stock ran out in the batch), refused at a glance (5 > 3), and a
    // two-line order (prepare_order and claim_order: the trigger's path), refused after the plain sales took the stock
    const answers = await placeBatch([
      one(1),
      one(2, 2),
      one(3),
      one(4, 5),
      req(5, [
        { sku: 'EVB-1', quantity: 1 },
        { sku: 'EVB-2', quantity: 1 },
      ]),
    ]);
    expect(answers.map((a) => [a.order.status, a.order.rejection?.code ?? null])).toEqual([
      ['RESERVED', null],
      ['RESERVED', null],
      ['REJECTED', 'SOLD_OUT'],
      ['REJECTED', 'INSUFFICIENT_STOCK'],
      ['REJECTED', 'SOLD_OUT'],
    ]);
    const ids = answers.map((a) => a.order.id as string);
    // one event per order (a sale refused under the lock is one order.rejected, not reserved then rejected), each
    // the order's first, its document what order_json reads now
    const logged = await eventsOf(ids);
    expect(new Map(logged.map((e) => [e.id, [e.type, e.sequence, e.current]]))).toEqual(
      new Map(ids.map((id, i) => [id, [i < 2 ? 'order.reserved' : 'order.rejected', 1, true]])),
    );
    expect(logged).toHaveLength(5);
    // a replay logs nothing; a later change is the trigger's again: order.released, the order's second
    const replay = await placeBatch([one(1), one(6, 9)]);
    expect(replay.map((a) => a.kind)).toEqual(['replayed', 'rejected']);
    await t.db.query(`SELECT release_order('cev', $1::uuid, 'test')`, [ids[0]]);
    expect((await eventsOf([ids[0]!])).map((e) => [e.type, e.sequence, e.current])).toEqual([
      ['order.reserved', 1, false],
      ['order.released', 2, true],
    ]);
    // the setting is cleared after each statement that logs for itself: a sold-out storm (every request answered at
    // a glance, place_orders returns early) and, in the same transaction, an order on the trigger's path
    await t.db.transaction(async (tx) => {
      await tx.query(`SELECT place_orders($1::jsonb, 600, 24, 0)`, [JSON.stringify([one(7, 9), one(8, 9)])]);
      await tx.query(`SELECT place_orders($1::jsonb, 600, 24, 0)`, [
        JSON.stringify([
          req(9, [
            { sku: 'EVB-2', quantity: 1 },
            { sku: 'EVB-3', quantity: 1 },
          ]),
        ]),
      ]);
    });
    const laterIds = (
      await t.db.query(
        `SELECT id::text FROM orders WHERE client_id = 'cev' AND customer_id = ANY($1) ORDER BY customer_id`,
        [['cust-7', 'cust-8', 'cust-9']],
      )
    ).rows.map((r) => r.id as string);
    expect(laterIds).toHaveLength(3);
    const laterLogged = await eventsOf(laterIds);
    expect(laterLogged.map((e) => [e.type, e.sequence, e.current])).toEqual([
      ['order.rejected', 1, true],
      ['order.rejected', 1, true],
      ['order.reserved', 1, true],
    ]);
  });

  it('answers a retry of a plain sale from its key row, and the same key with another request IDEMPOTENCY_KEY_REUSED', async () => {
    await t.product('SET-2', 5);
    const req = (n: number, hash = `h${n}`) => ({
      clientId: 'c2',
      customerId: `cust-${n}`,
      key: `k${n}`,
      hash,
      lines: [{ sku: 'SET-2', quantity: 1 }],
      buyer: null,
      tokenHash: null,
    });
    const first = await placeBatch([req(1), req(2)]);
    const again = await placeBatch([req(1), req(2, 'other'), req(3)]);
    expect(again.map((a) => a.kind)).toEqual(['replayed', 'reused', 'placed']);
    expect(again[0].order.id).toBe(first[0].order.id);
    expect(await t.inventory('SET-2')).toEqual({ available: 2, reserved: 3, sold: 0 });
  });
});

describe('place_orders: plain sales beside per-order claims (review findings)', () => {
  const req = (client: string, sku: string, n: number, o: { buyer?: string; hash?: string; key?: string } = {}) => ({
    clientId: client,
    customerId: `cust-${n}`,
    key: o.key ?? `k${n}`,
    hash: o.hash ?? `h${n}`,
    lines: [{ sku, quantity: 1 }],
    buyer: o.buyer ?? null,
    tokenHash: null,
  });

  it('keeps arrival order across both paths: a buyer twice in the batch (per-order claims) still wins the last unit when it came first', async () => {
    await t.product('MIX-1', 1);
    const answers = await placeBatch(
      [
        req('m1', 'MIX-1', 1, { buyer: 'b' }),
        req('m1', 'MIX-1', 2, { buyer: 'c' }),
        req('m1', 'MIX-1', 3, { buyer: 'b' }),
      ],
      5,
    );
    expect(answers.map((a) => [a.kind, a.order.rejection?.code ?? null])).toEqual([
      ['placed', null],
      ['rejected', 'SOLD_OUT'],
      ['rejected', 'SOLD_OUT'],
    ]);
    expect(await t.inventory('MIX-1')).toEqual({ available: 0, reserved: 1, sold: 0 });
    const holds = await t.db.query(`SELECT buyer, active FROM buyer_holds WHERE client_id = 'm1' ORDER BY buyer`);
    expect(holds.rows).toEqual([{ buyer: 'b', active: 1 }]);
  });

  it('answers a key sent twice with two requests in one batch: the first to arrive is placed or refused, the other IDEMPOTENCY_KEY_REUSED', async () => {
    await t.product('MIX-2', 1);
    const answers = await placeBatch(
      [req('m2', 'MIX-2', 1), req('m2', 'MIX-2', 2), { ...req('m2', 'MIX-2', 2), hash: 'other' }],
      0,
    );
    expect(answers.map((a) => a.kind)).toEqual(['placed', 'rejected', 'reused']);
    expect(answers[2].orderId).toBe(answers[1].order.id);
    const rejected = await t.db.query(`SELECT status, rejection->>'code' AS code FROM orders WHERE id = $1`, [
      answers[1].order.id,
    ]);
    expect(rejected.rows).toEqual([{ status: 'REJECTED', code: 'SOLD_OUT' }]);
  });
});

describe('place_orders: a refusal names the rule the request broke', () => {
  const req = (sku: string, n: number, quantity = 1) => ({
    clientId: sku,
    customerId: 'one',
    key: `${sku}-${n}`,
    hash: `h${n}`,
    lines: [{ sku, quantity }],
    buyer: 'customer:one',
    tokenHash: null,
  });
  const holds = async (client: string) =>
    (await t.db.query(`SELECT active FROM buyer_holds WHERE client_id = $1 AND buyer = 'customer:one'`, [client])).rows;

  it('answers PURCHASE_LIMIT, not HOLD_LIMIT, to the requests of a batch both limits refuse, and gives back no hold it did not count', async () => {
    await t.product('RULE-1', 100);
    await t.db.query(`SELECT set_purchase_limit('RULE-1', 1)`);
    // 8 requests of one buyer, 5 hold slots: the batch counts 5 holds before its claims, and the purchase limit refuses 7
    const answers = await placeBatch(
      Array.from({ length: 8 }, (_, i) => req('RULE-1', i)),
      5,
    );
    expect(answers.map((a) => a.order.rejection?.code ?? a.order.status)).toEqual([
      'RESERVED',
      ...Array(7).fill('PURCHASE_LIMIT'),
    ]);
    expect(answers[1].order.rejection).toEqual({
      code: 'PURCHASE_LIMIT',
      sku: 'RULE-1',
      message: 'RULE-1 is limited to 1 per customer',
    });
    expect(await holds('RULE-1')).toEqual([{ active: 1 }]);
    expect(await t.inventory('RULE-1')).toEqual({ available: 99, reserved: 1, sold: 0 });
  });

  it('asks a hold the batch was refused again after earlier refusals gave theirs back, as arrival order would decide', async () => {
    await t.product('RULE-2', 100);
    await t.db.query(`SELECT set_purchase_limit('RULE-2', 3)`);
    // 2 hold slots: the third request's hold is refused when the batch counts them; the second then breaks the purchase
    // limit and gives its hold back, so the third, which the limit allows, takes that slot at its claim
    const answers = await placeBatch([req('RULE-2', 1, 2), req('RULE-2', 2, 2), req('RULE-2', 3, 1)], 2);
    expect(answers.map((a) => a.order.rejection?.code ?? a.order.status)).toEqual([
      'RESERVED',
      'PURCHASE_LIMIT',
      'RESERVED',
    ]);
    expect(await holds('RULE-2')).toEqual([{ active: 2 }]);
    const { rows } = await t.db.query(
      `SELECT units FROM customer_purchases WHERE client_id = 'RULE-2' AND sku = 'RULE-2'`,
    );
    expect(rows).toEqual([{ units: 3 }]);
  });
});

describe('place_orders: plain sales of a SKU with stock buckets', () => {
  const req = (sku: string, n: number, quantity = 1) => ({
    clientId: 'bk',
    customerId: `cust-${n}`,
    key: `${sku}-${n}`,
    hash: `h${n}`,
    lines: [{ sku, quantity }],
    buyer: null,
    tokenHash: null,
  });
  const buckets = async (sku: string) =>
    (
      await t.db.query(
        `SELECT bucket, available, reserved, version::int AS version FROM inventory_buckets WHERE sku = $1 ORDER BY bucket`,
        [sku],
      )
    ).rows as { bucket: number; available: number; reserved: number; version: number }[];
  const events = async (sku: string, after: number) =>
    (
      await t.db.query(
        `SELECT payload FROM outbox WHERE topic = 'availability' AND aggregate_key = $1 AND id > $2 ORDER BY id`,
        [sku, after],
      )
    ).rows.map((r) => r.payload);
  /** the SKU's figures: its row's plus its buckets' */
  const stock = async (sku: string) =>
    (
      await t.db.query(
        `SELECT i.available + sum(b.available)::int AS available, i.reserved + sum(b.reserved)::int AS reserved,
                i.sold + sum(b.sold)::int AS sold
           FROM inventory i JOIN inventory_buckets b ON b.sku = i.sku WHERE i.sku = $1
          GROUP BY i.available, i.reserved, i.sold`,
        [sku],
      )
    ).rows[0];
  const lastOutbox = async () => Number((await t.db.query(`SELECT coalesce(max(id), 0) AS id FROM outbox`)).rows[0].id);

  it('takes a batch from ONE bucket with one conditional UPDATE and one availability event of the SKU', async () => {
    await t.product('BKB-1', 40);
    expect((await t.db.query(`SELECT set_stock_buckets('BKB-1', 4) AS r`)).rows[0].r).toEqual({
      buckets: 4,
      available: 40,
    });
    const before = await buckets('BKB-1');
    const after = await lastOutbox();
    const answers = await placeBatch(Array.from({ length: 6 }, (_, i) => req('BKB-1', i)));
    expect(answers.map((a) => a.order.status)).toEqual(Array(6).fill('RESERVED'));
    const now = await buckets('BKB-1');
    const changed = now.filter((b, i) => b.version !== before[i]!.version);
    // one bucket took all six, its version grew once: one UPDATE for the batch, not one claim per order
    expect(changed).toHaveLength(1);
    expect(changed[0]).toMatchObject({ available: 4, reserved: 6, version: before[changed[0]!.bucket]!.version + 1 });
    expect(now.reduce((n, b) => n + b.available, 0)).toBe(34);
    // subscribers see the SKU, never a bucket: the SKU's sums
    expect(await events('BKB-1', after)).toEqual([
      expect.objectContaining({ sku: 'BKB-1', available: 34, soldOut: false }),
    ]);
    expect(await stock('BKB-1')).toEqual({ available: 34, reserved: 6, sold: 0 });
  });

  it('moves on to another bucket when the one it holds runs short, and refuses only what the whole SKU cannot cover', async () => {
    await t.product('BKB-2', 8);
    await t.db.query(`SELECT set_stock_buckets('BKB-2', 4)`); // 2 units per bucket
    // 2 + 2 + 1 + 1 + 1 + 2 = 9 units asked of 8: the batch takes buckets in turn, and the last request is refused
    const quantities = [2, 2, 1, 1, 1, 2];
    const answers = await placeBatch(quantities.map((q, i) => req('BKB-2', i, q)));
    expect(answers.map((a) => a.order.rejection?.code ?? a.order.status)).toEqual([
      'RESERVED',
      'RESERVED',
      'RESERVED',
      'RESERVED',
      'RESERVED',
      'INSUFFICIENT_STOCK',
    ]);
    expect(await stock('BKB-2')).toEqual({ available: 1, reserved: 7, sold: 0 });
    const { rows } = await t.db.query(`SELECT count(*)::int AS n FROM reservations r JOIN orders o ON o.id = r.order_id
                                        WHERE r.sku = 'BKB-2' AND o.status = 'RESERVED'`);
    expect(rows[0].n).toBe(5);
    // nothing refused while the SKU could cover it: a fresh order for the last unit is sold
    const last = await placeBatch([req('BKB-2', 10, 1), req('BKB-2', 11, 1)]);
    expect(last.map((a) => a.order.rejection?.code ?? a.order.status)).toEqual(['RESERVED', 'SOLD_OUT']);
    expect(await stock('BKB-2')).toEqual({ available: 0, reserved: 8, sold: 0 });
  });

  it('spreads a bucketed SKU over at most CLAIM_LANES_PER_SKU lanes, never more than it has buckets', async () => {
    await t.product('BKB-L', 10);
    await t.product('BKB-L1', 10);
    await t.db.query(`SELECT set_stock_buckets('BKB-L', 8)`);
    const lanes = async (maxLanes: number, sku: string) => {
      const laneOf = bucketLanes(t.db, maxLanes);
      return new Set(await Promise.all(Array.from({ length: 32 }, () => laneOf(sku))));
    };
    expect((await lanes(2, 'BKB-L')).size).toBe(2);
    expect((await lanes(64, 'BKB-L')).size).toBe(8);
    expect([...(await lanes(1, 'BKB-L'))]).toEqual(['BKB-L']);
    expect([...(await lanes(64, 'BKB-L1'))]).toEqual(['BKB-L1']); // one stock row: one lane
  });

  it('never waits for a bucket another transaction holds: it takes a free one, or hands the batch back (LU003)', async () => {
    await t.product('BKB-3', 4);
    await t.db.query(`SELECT set_stock_buckets('BKB-3', 2)`); // 2 and 2
    const holder = new pg.Client({ connectionString: t.dbUrl });
    await holder.connect();
    try {
      await holder.query('BEGIN');
      await holder.query(`SELECT 1 FROM inventory_buckets WHERE sku = 'BKB-3' AND bucket = 0 FOR UPDATE`);
      // bucket 0 is held: a batch of two takes bucket 1, without waiting
      const two = await placeBatch([req('BKB-3', 1), req('BKB-3', 2)]);
      expect(two.map((a) => a.order.status)).toEqual(['RESERVED', 'RESERVED']);
      expect((await buckets('BKB-3')).map((b) => b.available)).toEqual([2, 0]);
      // now only the held bucket has units: the batch neither waits nor says sold out; it is handed back whole
      await expect(placeBatch([req('BKB-3', 3), req('BKB-3', 4)])).rejects.toMatchObject({ code: 'LU003' });
      expect(await stock('BKB-3')).toEqual({ available: 2, reserved: 2, sold: 0 });
    } finally {
      await holder.query('ROLLBACK');
      await holder.end();
    }
  });
});
