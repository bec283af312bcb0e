// Waitlists through the real server: joinWaitlist's refusals, a returned unit handed to the head of the line in the
// transaction that returns it (an order RESERVED for WAITLIST_CLAIM_SECONDS), passed on when not paid, back on sale
// when nobody waits; and the race: 20 concurrent releases and expiries, each unit to one head exactly once.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawnServer, type ServerProcess } from '../kit/server.js';
import { createTestDatabase } from './support/db.js';
import { auditLedger } from './support/ledger.js';

const tdb = await createTestDatabase();
afterAll(() => tdb.drop());
const KEY = { shop: 'waitlist_storefront_key_01', admin: 'waitlist_admin_key_0000001' };
// two hosts on one database: `quick` hands out 2-second claims (the pass-on test), `slow` 900-second ones (the race)
let quick: ServerProcess;
let slow: ServerProcess;
beforeAll(async () => {
  const env = (claim: string) => ({
    DATABASE_URL: tdb.url,
    API_KEYS: `storefront:shop:${KEY.shop},admin:ops:${KEY.admin}`,
    SWEEP_INTERVAL_MS: '100',
    RATE_LIMIT_BUYER_PER_WINDOW: '0',
    MAX_ACTIVE_HOLDS: '0',
    WAITLIST_CLAIM_SECONDS: claim,
  });
  [quick, slow] = await Promise.all([spawnServer({ env: env('2') }), spawnServer({ env: env('900') })]);
});
afterAll(() => Promise.all([quick?.stop(), slow?.stop()]));

type Data = Record<string, any>; // biome-ignore lint/suspicious/noExplicitAny: GraphQL answers, read by the assertions
async function gql(
  srv: ServerProcess,
  query: string,
  variables: Record<string, unknown>,
  key = KEY.shop,
): Promise<Data> {
  const res = await fetch(srv.endpoint, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
    body: JSON.stringify({ query, variables }),
  });
  const body = (await res.json()) as Data;
  if (res.status !== 200 || body.errors) throw new Error(`fault: ${res.status} ${JSON.stringify(body)}`);
  return body.data;
}
const createProduct = (sku: string, stock: number) =>
  gql(
    quick,
    `mutation($i: CreateProductInput!) { createProduct(input: $i) { userErrors { code } } }`,
    { i: { sku, name: sku, priceAmount: 700, currencyCode: 'USD', initialStock: stock } },
    KEY.admin,
  );
let n = 0;
const place = (srv: ServerProcess, customerId: string, sku: string) =>
  gql(srv, `mutation($i: PlaceOrderInput!) { placeOrder(input: $i) { order { id status } userErrors { code } } }`, {
    i: { idempotencyKey: `p-${++n}`, customerId, lines: [{ sku, quantity: 1 }] },
  }).then((d) => d.placeOrder);
const join = (srv: ServerProcess, sku: string, customerId: string, key = `w-${sku}-${customerId}`) =>
  gql(
    srv,
    `mutation($i: JoinWaitlistInput!) { joinWaitlist(input: $i) { entry { id state place orderId } entryToken userErrors { code field } } }`,
    { i: { sku, customerId, idempotencyKey: key } },
  ).then((d) => d.joinWaitlist);
const release = (orderId: string) =>
  gql(
    quick,
    `mutation($i: ReleaseReservationInput!) { releaseReservation(input: $i) { order { status } userErrors { code } } }`,
    { i: { orderId } },
  ).then((d) => d.releaseReservation);
const entries = async (sku: string) =>
  (
    await tdb.db.query(
      `SELECT w.customer_id, w.state, w.order_id::text, o.status, r.expires_at - o.created_at AS hold
         FROM waitlist_entries w LEFT JOIN orders o ON o.id = w.order_id LEFT JOIN reservations r ON r.order_id = o.id
        WHERE w.sku = $1 ORDER BY w.place`,
      [sku],
    )
  ).rows;
const inventory = async (sku: string) =>
  (await tdb.db.query(`SELECT available, reserved, sold FROM inventory WHERE sku = $1`, [sku])).rows[0];
const until = async <T>(f: () => Promise<T>, ok: (v: T) => boolean, ms = 20_000): Promise<T> => {
  const end = Date.now() + ms;
  for (;;) {
    const v = await f();
    if (ok(v) || Date.now() > end) return v;
    await new Promise((r) => setTimeout(r, 100));
  }
};

describe('joinWaitlist', () => {
  it('answers AVAILABLE for a SKU that is not sold out and UNKNOWN_SKU for none, writing nothing; one entry per customer', async () => {
    await createProduct('WL-A', 1);
    expect(await join(quick, 'WL-A', 'a1')).toEqual({
      entry: null,
      entryToken: null,
      userErrors: [{ code: 'AVAILABLE', field: ['input', 'sku'] }],
    });
    expect((await join(quick, 'WL-NOPE', 'a1')).userErrors).toEqual([{ code: 'UNKNOWN_SKU', field: ['input', 'sku'] }]);
    expect((await tdb.db.query(`SELECT count(*)::int AS n FROM waitlist_entries`)).rows[0].n).toBe(0);
    expect(await place(quick, 'buyer', 'WL-A')).toMatchObject({ order: { status: 'RESERVED' } });
    const first = await join(quick, 'WL-A', 'a1');
    expect(first).toMatchObject({ entry: { state: 'WAITING', place: 1 }, userErrors: [] });
    expect(first.entryToken).toMatch(/^ot_/);
    expect(await join(quick, 'WL-A', 'a1')).toMatchObject({ entry: { id: first.entry.id }, entryToken: null }); // replay
    expect((await join(quick, 'WL-A', 'a1', 'another-key')).userErrors).toEqual([
      { code: 'ALREADY_ENTERED', field: ['input', 'customerId'] },
    ]);
  });
});

describe('a returned unit', () => {
  it('goes to the head in the same transaction (RESERVED for WAITLIST_CLAIM_SECONDS), passes on unpaid, and is back on sale when nobody waits', async () => {
    await createProduct('WL-B', 1);
    const held = await place(quick, 'holder', 'WL-B');
    for (const c of ['b1', 'b2']) expect((await join(quick, 'WL-B', c)).userErrors).toEqual([]);
    // the release and the hand-off are one transaction: right after the release the unit is b1's, never on sale
    expect((await release(held.order.id)).order.status).toBe('CANCELLED');
    const [b1, b2] = await entries('WL-B');
    expect(b1).toMatchObject({ customer_id: 'b1', state: 'OFFERED', status: 'RESERVED' });
    expect(b1.hold).toMatchObject({ seconds: 2 });
    expect(b2).toMatchObject({ state: 'WAITING', order_id: null });
    expect(await inventory('WL-B')).toEqual({ available: 0, reserved: 1, sold: 0 });
    expect((await place(quick, 'sniper', 'WL-B')).userErrors).toEqual([{ code: 'SOLD_OUT' }]);
    // b1 does not pay: the sweeper expires its order and the unit passes to b2
    const after = await until(
      () => entries('WL-B'),
      (e) => e[1]?.state === 'OFFERED',
    );
    expect(after.map((e) => [e.customer_id, e.state, e.status])).toEqual([
      ['b1', 'OFFERED', 'EXPIRED'],
      ['b2', 'OFFERED', 'RESERVED'],
    ]);
    // b2 does not pay either; nobody waits: the unit is back on sale
    await until(
      () => inventory('WL-B'),
      (i) => i.available === 1,
    );
    expect(await inventory('WL-B')).toEqual({ available: 1, reserved: 0, sold: 0 });
    expect(await auditLedger(tdb.db, { stocked: { 'WL-B': 1 } })).toEqual([]);
  });

  it('a restock goes to the head first', async () => {
    await createProduct('WL-C', 0);
    expect((await join(slow, 'WL-C', 'c1')).userErrors).toEqual([]);
    await gql(
      quick,
      `mutation($i: RestockInput!) { restock(input: $i) { userErrors { code } } }`,
      { i: { sku: 'WL-C', quantity: 2 } },
      KEY.admin,
    );
    expect((await entries('WL-C')).map((e) => [e.customer_id, e.state, e.status])).toEqual([
      ['c1', 'OFFERED', 'RESERVED'],
    ]);
    expect(await inventory('WL-C')).toEqual({ available: 1, reserved: 1, sold: 0 });
  });
});

describe('the race', () => {
  it('20 concurrent releases and expiries: every returned unit goes to one head, once, in line order', async () => {
    await createProduct('WL-R', 20);
    const holds = [];
    for (let i = 0; i < 20; i++) holds.push(await place(slow, `h${i}`, 'WL-R'));
    expect(holds.every((h) => h.order.status === 'RESERVED')).toBe(true);
    for (let i = 0; i < 30; i++)
      expect((await join(slow, 'WL-R', `r${String(i).padStart(2, '0')}`)).userErrors).toEqual([]);
    const ids = holds.map((h) => h.order.id as string);
    // ten expire (the sweepers of both hosts find them due) while the other ten are released at the same moment
    await tdb.db.query(
      `UPDATE reservations SET expires_at = now() - interval '1 second' WHERE order_id = ANY ($1::uuid[])`,
      [ids.slice(0, 10)],
    );
    const releases = await Promise.all(ids.slice(10).map((id) => release(id)));
    expect(releases.every((r) => r.order.status === 'CANCELLED')).toBe(true);
    const done = await until(
      () => entries('WL-R'),
      (e) => e.filter((x) => x.state === 'OFFERED').length >= 20,
    );
    const offered = done.filter((e) => e.state === 'OFFERED');
    expect(offered).toHaveLength(20);
    expect(offered.map((e) => e.customer_id)).toEqual(done.slice(0, 20).map((e) => e.customer_id)); // line order
    expect(new Set(offered.map((e) => e.order_id)).size).toBe(20);
    expect(offered.every((e) => e.status === 'RESERVED')).toBe(true);
    expect(done.slice(20).every((e) => e.state === 'WAITING')).toBe(true);
    // no customer holds two offered orders, nothing went back on sale
    const { rows } = await tdb.db.query(
      `SELECT count(*)::int AS n FROM orders o JOIN order_lines l ON l.order_id = o.id
        WHERE l.sku = 'WL-R' AND o.status = 'RESERVED' GROUP BY o.customer_id HAVING count(*) > 1`,
    );
    expect(rows).toEqual([]);
    expect(await inventory('WL-R')).toEqual({ available: 0, reserved: 20, sold: 0 });
    expect(await auditLedger(tdb.db, { stocked: { 'WL-R': 20 } })).toEqual([]);
  });
});
