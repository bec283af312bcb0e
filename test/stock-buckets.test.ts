// Stock buckets (setStockBuckets, db/functions/120_stock-buckets.sql): a SKU's units spread over several rows, its
// figures the buckets' sums. Two server processes (claim batching off, and two batches in flight) race buyers for a
// bucketed SKU: nobody oversold, one order per key, no false sold out with quantities that fragment the buckets,
// returned units back in a bucket, and the ledger audit clean after every race.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawnServer, type ServerProcess } from '../kit/server.js';
import { createTestDatabase, type TestDatabase } from './support/db.js';
import { CREATE_PRODUCT, KEYS, PLACE_ORDER, RELEASE } from './support/app.js';
import { auditLedger } from './support/ledger.js';

const API_KEYS = `storefront:${KEYS.storefront},admin:${KEYS.admin}`;
const SET_BUCKETS = `mutation($input: SetStockBucketsInput!) { setStockBuckets(input: $input) {
  product { sku availability { available version } } userErrors { code field message } } }`;
type Placed = {
  order: { id: string; status: string; rejection: { code: string } | null } | null;
  userErrors: { code: string }[];
};

let tdb: TestDatabase;
let servers: ServerProcess[] = [];
beforeAll(async () => {
  tdb = await createTestDatabase({ max: 10 });
  const env = {
    DATABASE_URL: tdb.url,
    API_KEYS,
    DATABASE_POOL_SIZE: '16',
    RATE_LIMIT_BUYER_PER_WINDOW: '0',
    MAX_ACTIVE_HOLDS: '0',
    RELAY: 'off',
  };
  servers = await Promise.all([
    spawnServer({ env: { ...env, CLAIM_BATCHING: 'off' } }),
    spawnServer({ env: { ...env, CLAIM_BATCHING: 'on', CLAIM_BATCHES_IN_FLIGHT: '2' } }),
  ]);
}, 90_000);
afterAll(async () => {
  await Promise.all(servers.map((s) => s.stop()));
  await tdb?.drop();
});

async function gql(query: string, variables: Record<string, unknown>, key = KEYS.storefront, srv = servers[0]!) {
  const res = await fetch(srv.endpoint, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
    body: JSON.stringify({ query, variables }),
  });
  return res.json();
}
async function product(sku: string, stock: number) {
  const input = { sku, name: sku, priceAmount: 100, currencyCode: 'USD', initialStock: stock };
  expect((await gql(CREATE_PRODUCT, { input }, KEYS.admin)).data.createProduct.userErrors).toEqual([]);
}
const setBuckets = async (sku: string, buckets: number, key = KEYS.admin) =>
  gql(SET_BUCKETS, { input: { sku, buckets } }, key);
const placeOrder = async (i: number, input: { idempotencyKey: string; customerId: string; lines: unknown[] }) => {
  let body = await gql(PLACE_ORDER, { input }, KEYS.storefront, servers[i % 2]!);
  // a client's side of DATABASE_UNAVAILABLE (docs/api.md): the same request again, same key, after Retry-After; on a
  // machine running other suites beside this one the pool's wait for a connection can run out under 200 buyers
  for (let tries = 0; body.errors?.[0]?.extensions?.code === 'DATABASE_UNAVAILABLE' && tries < 10; tries++) {
    await new Promise((r) => setTimeout(r, 1000));
    body = await gql(PLACE_ORDER, { input }, KEYS.storefront, servers[i % 2]!);
  }
  if (body.errors)
    throw new Error(`${JSON.stringify(body.errors)}\n--- server output ---\n${servers[i % 2]!.output()}`);
  return body.data.placeOrder as Placed;
};
const buckets = async (sku: string) =>
  (
    await tdb.db.query(
      'SELECT bucket, available, reserved, sold FROM inventory_buckets WHERE sku = $1 ORDER BY bucket',
      [sku],
    )
  ).rows as { bucket: number; available: number; reserved: number; sold: number }[];
const totalAvailable = async (sku: string) => (await buckets(sku)).reduce((n, b) => n + b.available, 0);
/** n buyers at once */
const all = <T>(n: number, buy: (i: number) => Promise<T>) => Promise.all(Array.from({ length: n }, (_, i) => buy(i)));
/** 0 duplicates: every order of these SKUs is the one order of its own key. */
const duplicates = async () =>
  (
    await tdb.db.query(
      `SELECT (SELECT count(DISTINCT o.id) FROM orders o JOIN order_lines l ON l.order_id = o.id WHERE l.sku LIKE 'BK-%')
            - (SELECT count(DISTINCT k.order_id) FROM idempotency_keys k JOIN order_lines l ON l.order_id = k.order_id
                WHERE l.sku LIKE 'BK-%') AS n`,
    )
  ).rows[0].n as number;

describe('stock buckets', () => {
  it('setStockBuckets is admin only, refuses bad input writing nothing, and keeps the figures the sums', async () => {
    await product('BK-SET', 10);
    const denied = await setBuckets('BK-SET', 4, KEYS.storefront);
    expect(denied.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
    for (const [sku, n, code, field] of [
      ['BK-SET', 0, 'INVALID_INPUT', 'buckets'],
      ['BK-SET', 65, 'INVALID_INPUT', 'buckets'],
      ['BK-NONE', 2, 'UNKNOWN_SKU', 'sku'],
    ] as const) {
      const r = (await setBuckets(sku, n)).data.setStockBuckets;
      expect(r.product).toBeNull();
      expect(r.userErrors).toMatchObject([{ code, field: ['input', field] }]);
    }
    expect(await buckets('BK-SET')).toEqual([]);
    const split = (await setBuckets('BK-SET', 4)).data.setStockBuckets;
    expect(split.userErrors).toEqual([]);
    expect(split.product.availability.available).toBe(10);
    expect((await buckets('BK-SET')).map((b) => b.available)).toEqual([3, 3, 2, 2]);
    const row = (await tdb.db.query('SELECT available, buckets FROM inventory WHERE sku = $1', ['BK-SET'])).rows[0];
    expect(row).toEqual({ available: 0, buckets: 4 });
    const back = (await setBuckets('BK-SET', 1)).data.setStockBuckets;
    expect(back.product.availability.available).toBe(10);
    expect(back.product.availability.version).toBeGreaterThan(split.product.availability.version);
    expect(await buckets('BK-SET')).toEqual([]);
  });

  it('200 buyers over two processes for 50 units in 8 buckets: 50 sold, nobody oversold, one order per key', async () => {
    await product('BK-HOT', 50);
    await setBuckets('BK-HOT', 8);
    const placed = await all(200, (i) =>
      placeOrder(i, { idempotencyKey: `hot-${i}`, customerId: `c-${i}`, lines: [{ sku: 'BK-HOT', quantity: 1 }] }),
    );
    expect(placed.filter((p) => p.order?.status === 'RESERVED')).toHaveLength(50);
    const refused = placed.filter((p) => p.order?.status === 'REJECTED');
    expect(refused).toHaveLength(150);
    for (const p of refused) expect(p.order!.rejection!.code).toBe('SOLD_OUT');
    expect(await totalAvailable('BK-HOT')).toBe(0);
    expect(await duplicates()).toBe(0);
    expect(await auditLedger(tdb.db, { stocked: { 'BK-HOT': 50 } })).toEqual([]);
    // every availability event of the race is published as the SKU's committed sum: the final count, 0, sold out
    const published = await tdb.db.query(
      `SELECT availability_now(p_sku => aggregate_key, p_payload => payload) AS p FROM outbox
        WHERE topic = 'availability' AND aggregate_key = 'BK-HOT'`,
    );
    expect(published.rows.length).toBeGreaterThan(0); // one per claim, or one per batch of claims from one bucket
    expect(new Set(published.rows.map((r) => `${r.p.available} ${r.p.soldOut}`))).toEqual(new Set(['0 true']));
  });

  it('no false sold out: quantities that fragment the buckets are refused only when the SKU cannot cover them', async () => {
    await product('BK-FRAG', 12);
    await setBuckets('BK-FRAG', 4); // 3 per bucket
    // four orders of 2 leave at most 1 in each bucket they hit: 4 left, in pieces
    for (let i = 0; i < 4; i++) {
      const p = await placeOrder(i, {
        idempotencyKey: `frag-${i}`,
        customerId: `f-${i}`,
        lines: [{ sku: 'BK-FRAG', quantity: 2 }],
      });
      expect(p.order?.status).toBe('RESERVED');
    }
    expect(Math.max(...(await buckets('BK-FRAG')).map((b) => b.available))).toBeLessThan(4);
    const four = await placeOrder(0, {
      idempotencyKey: 'frag-4',
      customerId: 'f-4',
      lines: [{ sku: 'BK-FRAG', quantity: 4 }],
    });
    expect(four.order?.status).toBe('RESERVED'); // taken in pieces from several buckets
    const none = await placeOrder(1, {
      idempotencyKey: 'frag-5',
      customerId: 'f-5',
      lines: [{ sku: 'BK-FRAG', quantity: 1 }],
    });
    expect(none.order?.rejection?.code).toBe('SOLD_OUT');
    expect(await auditLedger(tdb.db, { stocked: { 'BK-FRAG': 12 } })).toEqual([]);
  });

  it('racing mixed quantities (1-3) and carts with a plain SKU: every refusal is one the SKU total could not cover', async () => {
    await product('BK-MIX', 100);
    await product('BK-PLAIN', 1000);
    await setBuckets('BK-MIX', 4);
    const qty = (i: number) => 1 + (i % 3);
    const placed = await all(120, (i) =>
      placeOrder(i, {
        idempotencyKey: `mix-${i}`,
        customerId: `m-${i}`,
        lines:
          i % 4 === 0
            ? [
                { sku: 'BK-PLAIN', quantity: 1 },
                { sku: 'BK-MIX', quantity: qty(i) },
              ]
            : [{ sku: 'BK-MIX', quantity: qty(i) }],
      }),
    );
    const left = await totalAvailable('BK-MIX');
    let sold = 0;
    placed.forEach((p, i) => {
      if (p.order?.status === 'RESERVED') sold += qty(i);
      // the SKU's available only falls, so a refusal of q means fewer than q were left then and are now
      else expect(left, `buyer ${i} refused ${qty(i)} with ${left} left at the end`).toBeLessThan(qty(i));
    });
    expect(sold + left).toBe(100);
    expect(await duplicates()).toBe(0);
    expect(await auditLedger(tdb.db, { stocked: { 'BK-MIX': 100, 'BK-PLAIN': 1000 } })).toEqual([]);
  });

  it('the sweeper evens buckets out while claims and releases race it, and no unit appears or vanishes', async () => {
    // the statements the API runs, at PostgreSQL's pace: claims (claim_bucketed), releases (the SKU row's write,
    // routed into the buckets) and the sweeper's pass, all at once for 3 s. A pass that decided which buckets to write
    // on figures read before a claim committed once set a bucket's neighbours to targets summed with its new figure.
    await product('BK-SWEEP', 8);
    await setBuckets('BK-SWEEP', 2);
    // at least 3 s and at least 100 claims and 100 passes (a busy machine takes longer to race that much), at most 30 s
    const until = Date.now() + 3000;
    const giveUp = Date.now() + 30_000;
    let claims = 0;
    let passes = 0;
    const racing = () => (Date.now() < until || claims <= 100 || passes <= 100) && Date.now() < giveUp;
    const loop = async (step: () => Promise<unknown>) => {
      while (racing()) await step();
    };
    const claimer = () =>
      loop(async () => {
        const r = await tdb.db.query(
          `SELECT sku FROM claim_bucketed(p_sku => 'BK-SWEEP', p_quantity => 1, p_sold => false)`,
        );
        claims += r.rowCount ?? 0;
      });
    const releaser = () =>
      loop(() =>
        tdb.db.transaction(async (c) => {
          await c.query(`SELECT 1 FROM inventory WHERE sku = 'BK-SWEEP' FOR UPDATE`);
          await c.query(`UPDATE inventory SET available = available + 1, reserved = reserved - 1 WHERE sku = 'BK-SWEEP'
                            AND (SELECT sum(reserved) FROM inventory_buckets WHERE sku = 'BK-SWEEP') > 0`);
        }),
      );
    const sweeper = () =>
      loop(async () => {
        await tdb.db.query('SELECT rebalance_stock_buckets()');
        passes++;
      });
    await Promise.all([claimer(), claimer(), claimer(), releaser(), releaser(), sweeper(), sweeper()]);
    expect(claims).toBeGreaterThan(100);
    expect(passes).toBeGreaterThan(100);
    const figures = await buckets('BK-SWEEP');
    expect(figures.reduce((n, b) => n + b.available + b.reserved + b.sold, 0)).toBe(8);
  });

  // A claim's bucket is picked once per statement (take_free_bucket). With statistics that say one bucket row per SKU
  // (what an ANALYZE of a table holding mostly single rows per SKU says) PostgreSQL joins the locking pick as the inner
  // side of a loop over the SKU's buckets; a pick written as a join then ran once per bucket and took the line from
  // each (one order of 3 reserved 3 in each of 2 buckets: 3 units stranded with no hold).
  it('takes a line from one bucket whatever the plan: reserved units are the holds, exactly', async () => {
    await product('BK-PLAN', 60);
    await setBuckets('BK-PLAN', 2);
    await tdb.db.query('ALTER TABLE inventory_buckets ALTER COLUMN sku SET (n_distinct = -1)');
    await tdb.db.query('ANALYZE inventory_buckets');
    try {
      // the statement as PostgreSQL plans it here: one bucket row per SKU expected, the pick inside a loop over them
      const plan = (
        await tdb.db.query(
          `EXPLAIN UPDATE inventory_buckets b SET available = b.available - 1 FROM (SELECT f.bucket FROM inventory_buckets f
             WHERE f.sku = 'BK-PLAN' AND f.available >= 1 ORDER BY f.bucket LIMIT 1 FOR NO KEY UPDATE SKIP LOCKED) c
            WHERE b.sku = 'BK-PLAN' AND b.bucket = c.bucket`,
        )
      ).rows
        .map((r) => r['QUERY PLAN'] as string)
        .join('\n');
      expect(plan.indexOf('Subquery Scan on c'), plan).toBeGreaterThan(plan.indexOf('on inventory_buckets b'));
      // straight to the function, each try in a transaction rolled back: the buckets give up exactly the line. The
      // servers' sweepers even the buckets out every second, holding each free one for a moment (SKIP LOCKED): a try
      // that meets both held takes nothing, and is made again
      const c = await tdb.db.pool.connect();
      try {
        let took = 0;
        for (let i = 0; took < 16 && i < 200; i++) {
          await c.query('BEGIN');
          const ok = (await c.query(`SELECT take_free_bucket('BK-PLAN', 3, false, 2) AS ok`)).rows[0].ok;
          const reserved = (
            await c.query(`SELECT sum(reserved)::int AS n FROM inventory_buckets WHERE sku = 'BK-PLAN'`)
          ).rows[0].n;
          await c.query('ROLLBACK');
          expect({ try: i, ok, reserved }).toEqual({ try: i, ok, reserved: ok ? 3 : 0 });
          if (ok) took++;
        }
        expect(took).toBe(16);
      } finally {
        c.release();
      }
      // and through placeOrder on both processes (claim batching off, and on)
      const placed = await all(12, (i) =>
        placeOrder(i, { idempotencyKey: `plan-${i}`, customerId: `pl-${i}`, lines: [{ sku: 'BK-PLAN', quantity: 2 }] }),
      );
      expect(placed.map((p) => p.order?.status)).toEqual(Array(12).fill('RESERVED'));
      const held = (
        await tdb.db.query(
          `SELECT coalesce(sum(quantity), 0)::int AS n FROM reservations WHERE sku = 'BK-PLAN' AND state = 'HELD'`,
        )
      ).rows[0].n;
      const figures = await buckets('BK-PLAN');
      expect(held).toBe(24);
      expect(figures.reduce((n, b) => n + b.reserved, 0)).toBe(24);
      expect(figures.reduce((n, b) => n + b.available, 0)).toBe(36);
      expect(await auditLedger(tdb.db, { stocked: { 'BK-PLAN': 60 } })).toEqual([]);
    } finally {
      await tdb.db.query('ALTER TABLE inventory_buckets ALTER COLUMN sku RESET (n_distinct)');
      await tdb.db.query('ANALYZE inventory_buckets');
    }
  });

  it('a release returns its units to a bucket, and the sweeper evens the buckets out', async () => {
    await product('BK-BACK', 8);
    await setBuckets('BK-BACK', 2);
    const p = await placeOrder(0, {
      idempotencyKey: 'back-1',
      customerId: 'b-1',
      lines: [{ sku: 'BK-BACK', quantity: 3 }],
    });
    expect(p.order?.status).toBe('RESERVED');
    const afterClaim = await buckets('BK-BACK');
    const released = await gql(RELEASE, { input: { orderId: p.order!.id } });
    expect(released.data.releaseReservation.userErrors).toEqual([]);
    const state = async () =>
      JSON.stringify({
        afterClaim,
        buckets: await buckets('BK-BACK'),
        row: (
          await tdb.db.query(`SELECT available, reserved, sold, buckets, version FROM inventory WHERE sku = 'BK-BACK'`)
        ).rows,
        holds: (await tdb.db.query(`SELECT state, quantity FROM reservations WHERE order_id = $1`, [p.order!.id])).rows,
        released: released.data.releaseReservation.order?.status,
      });
    expect(await totalAvailable('BK-BACK'), await state()).toBe(8);
    expect((await buckets('BK-BACK')).map((b) => b.reserved)).toEqual([0, 0]);
    await tdb.db.query(
      `UPDATE inventory_buckets SET available = CASE bucket WHEN 0 THEN 8 ELSE 0 END WHERE sku = 'BK-BACK'`,
    );
    await tdb.db.query('SELECT rebalance_stock_buckets()');
    expect((await buckets('BK-BACK')).map((b) => b.available)).toEqual([4, 4]);
    expect(await auditLedger(tdb.db, { stocked: { 'BK-BACK': 8 } })).toEqual([]);
  });

  // Last in the file: it creates the database's first channel, after which every SKU is listed.
  it('the first createChannel waits for a batch holding a bucket without deadlocking it', async () => {
    await product('BK-CH', 10);
    await product('BK-CH-PLAIN', 5);
    await setBuckets('BK-CH', 2);
    // a batch holds a bucket (lock_batch_bucket) and its next claim writes an inventory row
    const batch = await tdb.db.pool.connect();
    let created: Promise<{ data: { createChannel: { userErrors: unknown[] } } }> | undefined;
    try {
      await batch.query('BEGIN');
      // this side checks for a deadlock first, so a cycle shows here as 40P01 (not as the other side's silent retry)
      await batch.query(`SET LOCAL deadlock_timeout = '100ms'`);
      await batch.query(`SELECT 1 FROM inventory_buckets WHERE sku = 'BK-CH' AND bucket = 0 FOR NO KEY UPDATE`);
      const pid = (await batch.query('SELECT pg_backend_pid() AS pid')).rows[0].pid as number;
      created = gql(
        `mutation($input: CreateChannelInput!) { createChannel(input: $input) { userErrors { code message } } }`,
        { input: { id: 'bk', name: 'bk', kind: 'SANDBOX', endpoint: 'http://127.0.0.1:9/none' } },
        KEYS.admin,
      );
      // createChannel is waiting for the batch's bucket
      let waited = false;
      for (let i = 0; i < 250 && !waited; i++) {
        const { rows } = await tdb.db.query(
          `SELECT count(*)::int AS n FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
            WHERE NOT l.granted AND l.pid <> $1 AND a.datname = current_database()`,
          [pid],
        );
        waited = rows[0].n > 0;
        if (!waited) await new Promise((r) => setTimeout(r, 20));
      }
      expect(waited).toBe(true);
      await batch.query(`UPDATE inventory SET version = version WHERE sku = 'BK-CH-PLAIN'`);
      await batch.query('COMMIT');
    } finally {
      batch.release();
    }
    expect((await created!).data.createChannel.userErrors).toEqual([]);
    const flags = await tdb.db.query(`SELECT bool_and(followed) AS f FROM inventory_buckets WHERE sku = 'BK-CH'`);
    expect(flags.rows[0].f).toBe(true);
    const listed = await tdb.db.query(
      `SELECT sku, desired_quantity FROM channel_listings WHERE channel_id = 'bk' AND sku LIKE 'BK-CH%' ORDER BY sku`,
    );
    expect(listed.rows).toEqual([
      { sku: 'BK-CH', desired_quantity: 10 },
      { sku: 'BK-CH-PLAIN', desired_quantity: 5 },
    ]);
  });
});
