import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from './support/db.js';
import { spawnServer, type ServerProcess } from '../kit/server.js';
import { REDIS_URL, redisAvailable, uniquePrefix } from './support/redis.js';
import { subscribe } from './support/ws.js';
import { KEYS, CREATE_PRODUCT, PLACE_ORDER, RELEASE } from './support/app.js';

const hasRedis = await redisAvailable();
const API_KEYS = `storefront:${KEYS.storefront},storefront:${KEYS.storefront2},partner:${KEYS.partner},admin:${KEYS.admin}`;
const AVAIL =
  'subscription($skus: [String!]!) { availabilityChanged(skus: $skus) { sku available soldOut version updatedAt } }';
type Avail = { sku: string; available: number; soldOut: boolean; version: number };

describe.skipIf(!hasRedis)('two server instances on one PostgreSQL and one Redis', () => {
  let tdb: TestDatabase;
  let a: ServerProcess;
  let b: ServerProcess;
  beforeAll(async () => {
    tdb = await createTestDatabase({ max: 4 });
    // a 30 s poll: every delivery within the test's timeouts was woken by the NOTIFY sent after commit
    const env = {
      DATABASE_URL: tdb.url,
      API_KEYS,
      REDIS_URL,
      REDIS_KEY_PREFIX: uniquePrefix('inst'),
      DATABASE_POOL_SIZE: '10',
      RELAY_POLL_MS: '30000',
    };
    [a, b] = await Promise.all([spawnServer({ env }), spawnServer({ env })]);
  });
  afterAll(async () => {
    await Promise.all([a?.stop(), b?.stop()]);
    await tdb?.drop();
  });

  const gql = async (host: ServerProcess, query: string, variables: Record<string, unknown>, key = KEYS.storefront) => {
    const res = await fetch(`${host.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
      body: JSON.stringify({ query, variables }),
    });
    const body = (await res.json()) as any;
    if (body.errors) throw new Error(JSON.stringify(body.errors));
    return body.data;
  };
  const createProduct = (sku: string, stock: number) =>
    gql(
      a,
      CREATE_PRODUCT,
      { input: { sku, name: `Product ${sku}`, priceAmount: 500, currencyCode: 'USD', initialStock: stock } },
      KEYS.admin,
    );
  const version = async (sku: string) =>
    (await tdb.db.query('SELECT version FROM inventory WHERE sku = $1', [sku])).rows[0].version as number;

  it('delivers a sale committed through instance A to a subscriber on instance B, with the committed version', async () => {
    await createProduct('X-1', 3);
    const sub = await subscribe<Avail>(b.url, KEYS.storefront2, AVAIL, { skus: ['X-1'] });
    const placed = await gql(a, PLACE_ORDER, {
      input: { idempotencyKey: 'x-1', customerId: 'c', lines: [{ sku: 'X-1', quantity: 1 }] },
    });
    expect(placed.placeOrder.order.status).toBe('RESERVED');
    const v = await version('X-1');
    const e = await sub.waitFor((e) => e.version === v);
    expect(e).toMatchObject({ sku: 'X-1', available: 2, soldOut: false, version: v });
    await sub.close();
  });

  it('sells exactly 10 units to 500 concurrent buyers split across both instances; B hears the final figure', async () => {
    await createProduct('RUSH-10', 10);
    const sub = await subscribe<Avail>(b.url, KEYS.storefront, AVAIL, { skus: ['RUSH-10'] });
    const answers = await Promise.all(
      Array.from({ length: 500 }, (_, i) =>
        gql(i % 2 ? a : b, PLACE_ORDER, {
          input: { idempotencyKey: `rush-${i}`, customerId: `buyer-${i}`, lines: [{ sku: 'RUSH-10', quantity: 1 }] },
        }),
      ),
    );
    const outcomes = answers.map((d) =>
      d.placeOrder.order?.status === 'RESERVED' ? 'RESERVED' : d.placeOrder.userErrors[0]?.code,
    );
    expect(outcomes.filter((o) => o === 'RESERVED')).toHaveLength(10);
    expect(outcomes.filter((o) => o === 'SOLD_OUT')).toHaveLength(490);
    const { rows } = await tdb.db.query('SELECT available, reserved, sold FROM inventory WHERE sku = $1', ['RUSH-10']);
    expect(rows[0]).toEqual({ available: 0, reserved: 10, sold: 0 });
    const v = await version('RUSH-10');
    // two relays publish in parallel, so events may arrive out of order: the highest version is the truth
    const last = await sub.waitFor((e) => e.version === v, 15_000);
    expect(last).toMatchObject({ available: 0, soldOut: true });
    expect(Math.max(...sub.events.map((e) => e.version))).toBe(v);
    await sub.close();
  });

  it('gives every one of many identical subscribers each event (one shared execution), and keeps the rest when one leaves', async () => {
    await createProduct('SHARE-1', 5);
    const subs = await Promise.all(
      Array.from({ length: 5 }, () => subscribe<Avail>(b.url, KEYS.storefront, AVAIL, { skus: ['SHARE-1'] })),
    );
    const buy = (i: number) =>
      gql(a, PLACE_ORDER, {
        input: { idempotencyKey: `share-${i}`, customerId: 'c', lines: [{ sku: 'SHARE-1', quantity: 1 }] },
      });
    await buy(1);
    for (const s of subs) expect(await s.waitFor((e) => e.available === 4)).toMatchObject({ sku: 'SHARE-1' });
    await subs[0]!.close();
    await buy(2);
    for (const s of subs.slice(1)) expect(await s.waitFor((e) => e.available === 3)).toMatchObject({ sku: 'SHARE-1' });
    await Promise.all(subs.slice(1).map((s) => s.close()));
    await new Promise((r) => setTimeout(r, 100));
    const late = await subscribe<Avail>(b.url, KEYS.storefront, AVAIL, { skus: ['SHARE-1'] }); // after the group closed
    await buy(3);
    expect(await late.waitFor((e) => e.available === 2)).toMatchObject({ sku: 'SHARE-1' });
    await late.close();
  });

  it('refuses a subscriber without a valid key in connection_init (4403), and a partner key', async () => {
    for (const key of [null, 'not-a-key', KEYS.partner]) {
      const s = await subscribe(a.url, key, AVAIL, { skus: ['X-1'] });
      expect((await s.error).code).toBe(4403);
      await s.close();
    }
  });

  it("never sends one client's order events to another client", async () => {
    await createProduct('PRIV-1', 2);
    const placed = await gql(a, PLACE_ORDER, {
      input: { idempotencyKey: 'priv-1', customerId: 'c', lines: [{ sku: 'PRIV-1', quantity: 1 }] },
    });
    const id = placed.placeOrder.order.id;
    const q = `subscription($id: ID!) { orderStatusChanged(orderId: $id) { id status } }`;
    const owner = await subscribe<{ id: string; status: string }>(b.url, KEYS.storefront, q, { id });
    const stranger = await subscribe<{ id: string; status: string }>(b.url, KEYS.storefront2, q, { id });
    const strangerOnA = await subscribe<{ id: string; status: string }>(a.url, KEYS.storefront2, q, { id });
    await gql(a, RELEASE, { input: { orderId: id } });
    expect(await owner.waitFor((e) => e.status === 'CANCELLED')).toMatchObject({ id, status: 'CANCELLED' });
    await new Promise((r) => setTimeout(r, 500));
    expect(stranger.events).toEqual([]);
    expect(strangerOnA.events).toEqual([]);
    await Promise.all([owner.close(), stranger.close(), strangerOnA.close()]);
  });
});
