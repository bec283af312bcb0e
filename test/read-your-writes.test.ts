import { afterAll, describe, expect, it } from 'vitest';
import { randomBytes } from 'node:crypto';
import { createTestDatabase } from './support/db.js';
import { REDIS_URL, redisAvailable } from './support/redis.js';
import { spawnServer } from '../kit/server.js';

// With the Redis availability cache and NO relay (so nothing else refreshes the cache), a client that changes stock
// through an instance must read its own change from that instance at once, not the cached figure.
const hasRedis = await redisAvailable();
const tdb = await createTestDatabase();
const keys = {
  storefront: `ryw_shop_${randomBytes(6).toString('hex')}`,
  admin: `ryw_admin_${randomBytes(6).toString('hex')}`,
};
const server = hasRedis
  ? await spawnServer({
      env: {
        DATABASE_URL: tdb.url,
        API_KEYS: `storefront:${keys.storefront},admin:${keys.admin}`,
        REDIS_URL,
        REDIS_KEY_PREFIX: `ryw${randomBytes(4).toString('hex')}:`,
        CACHE_TTL_SECONDS: '300',
        RELAY: 'off',
      },
    })
  : undefined;
afterAll(async () => {
  await server?.stop();
  await tdb.drop();
});

const gql = async (query: string, key: string) => {
  const r = await fetch(`${server!.url}/graphql`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ query }),
  });
  const body = await r.json();
  if (body.errors) throw new Error(JSON.stringify(body.errors));
  return body.data;
};
const available = async () =>
  (await gql('{ product(sku: "RYW") { availability { available } } }', keys.storefront)).product.availability.available;

describe.skipIf(!hasRedis)('read-your-writes through the Redis availability cache', () => {
  it('shows an instance its own placeOrder, release and restock at once, though the cached figure lives 300 s', async () => {
    await gql(
      'mutation { createProduct(input: { sku: "RYW", name: "x", priceAmount: 100, currencyCode: "USD", initialStock: 3 }) { userErrors { code } } }',
      keys.admin,
    );
    expect(await available()).toBe(3);
    expect(await available()).toBe(3); // now served from the cache
    const placed = await gql(
      'mutation { placeOrder(input: { idempotencyKey: "r1", customerId: "c", lines: [{ sku: "RYW", quantity: 2 }] }) { order { id status } } }',
      keys.storefront,
    );
    expect(placed.placeOrder.order.status).toBe('RESERVED');
    expect(await available()).toBe(1);
    await gql(
      `mutation { releaseReservation(input: { orderId: "${placed.placeOrder.order.id}" }) { order { status } } }`,
      keys.storefront,
    );
    expect(await available()).toBe(3);
    await gql('mutation { restock(input: { sku: "RYW", quantity: 4 }) { userErrors { code } } }', keys.admin);
    expect(await available()).toBe(7);
  });
});
