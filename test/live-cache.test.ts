import { afterAll, describe, expect, it } from 'vitest';
import net from 'node:net';
import pino from 'pino';
import { startTestApp, KEYS } from './support/app.js';
import { DEAD_REDIS_URL, REDIS_URL, redisAvailable, uniquePrefix } from './support/redis.js';
import { connectRedis, type RedisClients } from '../subscriptions/redis.js';
import { createLivePubSub } from '../subscriptions/pubsub.js';
import { createAvailabilityCache } from '../subscriptions/availability-cache.js';
import { relayOnce } from '../subscriptions/relay.js';
import { countUnpublished } from '../db/outbox-store.js';
import { spawnServer } from '../kit/server.js';
import { CREATE_PRODUCT, PLACE_ORDER } from './support/app.js';
import { DEFAULTS } from '../kit/config-defaults.js';

const hasRedis = await redisAvailable();
const silent = pino({ level: 'silent' });
const PRODUCT = `query($sku: String!) { product(sku: $sku) { sku availability { available soldOut version } } }`;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** An app whose cache and pubsub use Redis at `url`. */
async function appOn(url: string, prefix: string) {
  let redis!: RedisClients;
  const t = await startTestApp({ poolSize: 8 }, undefined, (metrics) => {
    redis = connectRedis(url, prefix, silent, metrics);
    return {
      pubsub: createLivePubSub({ redis }),
      cache: createAvailabilityCache(redis, { ttlSeconds: 30, metrics, logger: silent }),
    };
  });
  afterAll(() => redis.close());
  const metric = async (name: string) => await t.metrics.registry.getSingleMetricAsString(name);
  const relay = () =>
    relayOnce({
      db: t.db,
      metrics: t.metrics,
      batchSize: DEFAULTS.live.relayBatchSize,
      leaseMs: DEFAULTS.live.relayLeaseMs,
      pubsub: createLivePubSub({ redis }),
      cache: createAvailabilityCache(redis, { ttlSeconds: 30, metrics: t.metrics, logger: silent }),
    });
  const available = async (sku: string) => (await t.gql(PRODUCT, { sku })).body.data.product.availability;
  return { t, redis, metric, relay, available };
}

describe('with Redis at a dead port', async () => {
  const { t, metric, relay, available } = await appOn(DEAD_REDIS_URL, uniquePrefix('dead'));

  it('answers queries from PostgreSQL, places and releases orders, and says so in a metric', async () => {
    await t.product('DEAD-1', 1);
    expect(await available('DEAD-1')).toMatchObject({ available: 1, soldOut: false });
    const placed = await t.placeOrder({ idempotencyKey: 'dead-1', lines: [{ sku: 'DEAD-1', quantity: 1 }] });
    expect(placed.order?.status).toBe('RESERVED');
    expect(await available('DEAD-1')).toMatchObject({ available: 0, soldOut: true });
    const lost = await t.placeOrder({
      idempotencyKey: 'dead-2',
      customerId: 'other',
      lines: [{ sku: 'DEAD-1', quantity: 1 }],
    });
    expect(lost.userErrors.map((e) => e.code)).toEqual(['SOLD_OUT']);
    expect((await t.release(placed.order!.id)).order?.status).toBe('CANCELLED');
    expect(await available('DEAD-1')).toMatchObject({ available: 1, soldOut: false });
    expect(await metric('lastunit_redis_up')).toMatch(/lastunit_redis_up 0/);
    expect(await metric('lastunit_availability_cache_reads_total')).toMatch(/result="fallback"} [1-9]/);
  });

  it('keeps events in the outbox while Redis cannot take them (none lost)', async () => {
    const before = await countUnpublished(t.db);
    expect(before).toBeGreaterThan(0);
    await expect(relay()).rejects.toThrow();
    expect(await countUnpublished(t.db)).toBe(before);
  });
});

describe('a server process started with REDIS_URL at a dead port', async () => {
  const t = await startTestApp({ poolSize: 2 }); // for its database
  it('starts, answers queries and sells from PostgreSQL, and reports Redis down in /metrics', async () => {
    const host = await spawnServer({
      env: {
        DATABASE_URL: t.dbUrl,
        API_KEYS: `storefront:${KEYS.storefront},admin:${KEYS.admin}`,
        REDIS_URL: DEAD_REDIS_URL,
        LOG_LEVEL: 'warn',
      },
    });
    try {
      const gql = async (query: string, variables: object, key = KEYS.storefront) =>
        (
          (await (
            await fetch(`${host.url}/graphql`, {
              method: 'POST',
              headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
              body: JSON.stringify({ query, variables }),
            })
          ).json()) as any
        ).data;
      await gql(
        CREATE_PRODUCT,
        { input: { sku: 'PROC-1', name: 'p', priceAmount: 1, currencyCode: 'USD', initialStock: 1 } },
        KEYS.admin,
      );
      expect((await gql(PRODUCT, { sku: 'PROC-1' })).product.availability).toMatchObject({
        available: 1,
        soldOut: false,
      });
      const placed = await gql(PLACE_ORDER, {
        input: { idempotencyKey: 'proc-1', customerId: 'c', lines: [{ sku: 'PROC-1', quantity: 1 }] },
      });
      expect(placed.placeOrder.order.status).toBe('RESERVED');
      expect((await gql(PRODUCT, { sku: 'PROC-1' })).product.availability).toMatchObject({
        available: 0,
        soldOut: true,
      });
      expect(await (await fetch(`${host.url}/metrics`)).text()).toMatch(/lastunit_redis_up 0/);
      expect(host.output()).toMatch(/redis unavailable: reads fall back to PostgreSQL/);
    } finally {
      await host.stop();
    }
  });
});

describe.skipIf(!hasRedis)('with Redis', async () => {
  // a TCP proxy in front of the real Redis, so "Redis goes away and comes back" needs no access to the shared server
  const target = new URL(REDIS_URL);
  const sockets = new Set<net.Socket>();
  const proxy = net.createServer((c) => {
    const u = net.connect(Number(target.port || 6379), target.hostname);
    for (const s of [c, u]) sockets.add(s), s.on('error', () => {}), s.on('close', () => sockets.delete(s));
    c.pipe(u).pipe(c);
  });
  await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', () => r()));
  const port = (proxy.address() as net.AddressInfo).port;
  afterAll(() => new Promise<void>((r) => (proxy.close(() => r()), sockets.forEach((s) => void s.destroy()))));
  const prefix = uniquePrefix('cache');
  const { t, redis, metric, relay, available } = await appOn(`redis://127.0.0.1:${port}`, prefix);
  while (!redis.isUp()) await sleep(20);

  it('serves reads from the cache and follows relay events, never showing an older version', async () => {
    await t.product('C-1', 3);
    expect(await available('C-1')).toMatchObject({ available: 3, version: 1 }); // miss, filled
    expect(await available('C-1')).toMatchObject({ available: 3, version: 1 }); // hit
    expect(await metric('lastunit_availability_cache_reads_total')).toMatch(/result="hit"} [1-9]/);
    await t.placeOrder({ idempotencyKey: 'c-1', lines: [{ sku: 'C-1', quantity: 3 }] });
    await relay();
    expect(await available('C-1')).toMatchObject({ available: 0, soldOut: true, version: 2 });
  });

  it('never lets the cache decide a sale (I10): a wrong cached figure is shown, placeOrder still asks PostgreSQL', async () => {
    await t.product('C-2', 0);
    await available('C-2');
    await redis.command.hset(
      `${prefix}avail:C-2`,
      'v',
      99,
      'j',
      JSON.stringify({ sku: 'C-2', available: 5, soldOut: false, version: 99, updatedAt: new Date() }),
    );
    expect(await available('C-2')).toMatchObject({ available: 5 });
    const r = await t.placeOrder({ idempotencyKey: 'c-2', lines: [{ sku: 'C-2', quantity: 1 }] });
    expect(r.userErrors.map((e) => e.code)).toEqual(['SOLD_OUT']);
  });

  it('falls back to PostgreSQL while Redis is away and resumes by itself when it is back', async () => {
    await t.product('C-3', 2);
    await available('C-3');
    proxy.close();
    for (const s of sockets) s.destroy();
    while (redis.isUp()) await sleep(20);
    await t.placeOrder({ idempotencyKey: 'c-3', lines: [{ sku: 'C-3', quantity: 1 }] });
    expect(await available('C-3')).toMatchObject({ available: 1 }); // PostgreSQL, not the stale cache
    expect(await metric('lastunit_redis_up')).toMatch(/lastunit_redis_up 0/);
    await new Promise<void>((r) => proxy.listen(port, '127.0.0.1', () => r()));
    const deadline = Date.now() + 10_000;
    while (!redis.isUp() && Date.now() < deadline) await sleep(50);
    expect(redis.isUp()).toBe(true);
    await relay(); // the events that waited in the outbox, cache updated
    expect(await available('C-3')).toMatchObject({ available: 1 });
    await t.gql(`mutation { restock(input: { sku: "C-3", quantity: 1 }) { userErrors { code } } }`, {}, KEYS.admin);
    await relay();
    expect(await available('C-3')).toMatchObject({ available: 2 });
    expect(await metric('lastunit_redis_up')).toMatch(/lastunit_redis_up 1/);
  });
});
