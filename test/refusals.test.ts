// I15: a refused request writes nothing, whatever refused it. Mutations run their root fields one after another, so a
// refusal decided inside a later field (its role, the per-buyer rate limit, input only the database refuses) would
// come after the earlier fields committed: everything that can refuse the whole operation is decided before any field
// runs. Each case compares a fingerprint of the tables before and after the refused request.
import { describe, expect, it } from 'vitest';
import { KEYS, startTestApp } from './support/app.js';
import { TEST_API_KEYS } from '../kit/keys.js';
import { fingerprint } from './support/ledger.js';
import { buyerRateLimit } from '../app/buyer-rate-limit.js';
import { memoryRateLimitStore } from '../app/rate-limit.js';

const PUBLIC = 'refusals_public_key_abcdefgh';
const t = await startTestApp({
  keys: [...TEST_API_KEYS, { role: 'public', key: PUBLIC }],
  maxActiveHolds: 0, // the rate limit is under test here, not the hold limit
  admitBuyer: buyerRateLimit({ limit: 30, windowSeconds: 3600, store: memoryRateLimitStore() }), // the default per window
  clientIp: (c) => c.req.header('x-test-ip') ?? '127.0.0.1',
});
await t.product('REF-A', 100);

const place = (alias: string, key: string, customerId = 'ref-c', sku = 'REF-A') =>
  `${alias}: placeOrder(input: { idempotencyKey: "${alias}-${key}", customerId: "${customerId}", lines: [{ sku: "${sku}", quantity: 1 }] }) { order { id } userErrors { code } }`;

describe('a refused operation runs none of its fields (I15)', () => {
  it('a storefront key with a placeOrder and an admin restock in one mutation: 403, nothing placed, nothing held', async () => {
    const before = await fingerprint(t.db);
    const r = await t.gql(
      `mutation { ${place('a', 'roles-1')} b: restock(input: { sku: "REF-A", quantity: 5 }) { userErrors { code } } }`,
    );
    expect(r.status).toBe(403);
    expect(r.body.data ?? null).toBeNull();
    expect(r.body.errors.map((e: any) => e.extensions?.code)).toEqual(['FORBIDDEN']);
    expect(await fingerprint(t.db)).toEqual(before);
  });

  it('the same with a public key, whose order token would never reach the browser: nothing held for the TTL', async () => {
    const before = await fingerprint(t.db);
    const r = await t.gql(
      `mutation { ${place('a', 'roles-2')} b: setStock(input: { sku: "REF-A", available: 0 }) { userErrors { code } } }`,
      {},
      PUBLIC,
    );
    expect([r.status, r.body.errors?.[0]?.extensions?.code]).toEqual([403, 'FORBIDDEN']);
    expect(await fingerprint(t.db)).toEqual(before);
  });

  it('the per-buyer limit counts every aliased placeOrder of the operation before any runs: 429, nothing placed', async () => {
    const batch = (n: number, tag: string) =>
      `mutation { ${Array.from({ length: n }, (_, i) => place(`p${i}`, tag, 'ref-bulk')).join(' ')} }`;
    for (const tag of ['bulk-1', 'bulk-2']) {
      const r = await t.gql(batch(10, tag));
      expect([r.status, r.body.errors]).toEqual([200, undefined]);
    }
    const before = await fingerprint(t.db);
    expect(before.counts.orders).toBeGreaterThanOrEqual(20);
    const refused = await t.gql(batch(15, 'bulk-3')); // 10 of them would still fit: none may run
    expect(refused.status).toBe(429);
    expect(refused.body.data ?? null).toBeNull();
    expect(refused.body.errors[0].extensions).toMatchObject({ code: 'RATE_LIMITED', scope: 'buyer' });
    expect(await fingerprint(t.db)).toEqual(before);
    const { rows } = await t.db.query(`SELECT count(*)::int AS n FROM orders WHERE customer_id = 'ref-bulk'`);
    expect(rows[0].n).toBe(20);
  });

  it('a public key: every alias counts against its address, whatever customerIds they send', async () => {
    const ip = { 'x-test-ip': '203.0.113.99' };
    const send = (n: number, tag: string) =>
      t.app.request('/graphql', {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${PUBLIC}`, ...ip },
        body: JSON.stringify({
          query: `mutation { ${Array.from({ length: n }, (_, i) => place(`w${i}`, tag, `anon-${tag}-${i}`)).join(' ')} }`,
        }),
      });
    expect((await send(15, 'pub-1')).status).toBe(200);
    expect((await send(10, 'pub-2')).status).toBe(200);
    const before = await fingerprint(t.db);
    const refused = await send(10, 'pub-3'); // 25 + 10 > 30: the first 5 would fit, none may run
    expect(refused.status).toBe(429);
    expect(await fingerprint(t.db)).toEqual(before);
  });

  it('a text value the database cannot store in a later field refuses the whole mutation: 400, the earlier field not run', async () => {
    const before = await fingerprint(t.db);
    const r = await t.gql(
      `mutation($sku: String!) { a: createProduct(input: { sku: "REF-NEW", name: "New", priceAmount: 100, currencyCode: "USD", initialStock: 3 }) { userErrors { code } }
                                 b: restock(input: { sku: $sku, quantity: 1 }) { userErrors { code } } }`,
      { sku: 'REF-A\u0000' },
      KEYS.admin,
    );
    expect(r.status).toBe(400);
    expect(r.body.data ?? null).toBeNull();
    expect(r.body.errors.map((e: any) => [e.extensions?.code, e.path])).toEqual([['BAD_USER_INPUT', ['b']]]);
    expect(await fingerprint(t.db)).toEqual(before);
  });
});
