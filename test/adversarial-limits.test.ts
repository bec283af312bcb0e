// An adversarial client of our own, limits side: one customer, or one scalper, pushing past a purchase limit, the hold
// limit and the per-buyer rate limit through several keys of one client (a rotated storefront key, the public key)
// and several addresses, all at once. Each attack ends with the ledger audit (test/support/ledger.ts).
import { describe, expect, it } from 'vitest';
import { KEYS, startTestApp } from './support/app.js';
import { auditLedger, fingerprint } from './support/ledger.js';
import { buyerRateLimit } from '../app/buyer-rate-limit.js';
import { memoryRateLimitStore } from '../app/rate-limit.js';

const K = {
  shop: 'adv_limits_storefront_key_1',
  shopRotated: 'adv_limits_storefront_key_2',
  web: 'adv_limits_public_key_1234',
};
const t = await startTestApp({
  keys: [
    { role: 'storefront', client: 'shop', key: K.shop },
    { role: 'storefront', client: 'shop', key: K.shopRotated },
    { role: 'public', client: 'shop', key: K.web },
    { role: 'admin', key: KEYS.admin },
  ],
  maxActiveHolds: 4,
  admitBuyer: buyerRateLimit({ limit: 12, windowSeconds: 3600, store: memoryRateLimitStore() }),
  clientIp: (c) => c.req.header('x-test-ip'),
  buyerTokenSecret: 'adversarial-limits-secret-0123456789',
});
const stocked: Record<string, number> = {};
async function limited(sku: string, stock: number, limit: number) {
  await t.product(sku, stock);
  stocked[sku] = stock;
  expect(
    (
      await t.gql(
        `mutation { setPurchaseLimit(input: { sku: "${sku}", limit: ${limit} }) { userErrors { code } } }`,
        {},
        KEYS.admin,
      )
    ).body.data.setPurchaseLimit.userErrors,
  ).toEqual([]);
}
let n = 0;
const PLACE = `mutation($i: PlaceOrderInput!) { placeOrder(input: $i) { order { id status } userErrors { code } } }`;
async function place(key: string, customerId: string, sku: string, opts: { ip?: string; buyerToken?: string } = {}) {
  const res = await t.app.request('/graphql', {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      authorization: `Bearer ${key}`,
      ...(opts.ip ? { 'x-test-ip': opts.ip } : {}),
    },
    body: JSON.stringify({
      query: PLACE,
      variables: {
        i: { idempotencyKey: `adv-l-${++n}`, customerId, lines: [{ sku, quantity: 1 }], buyerToken: opts.buyerToken },
      },
    }),
  });
  const body = (await res.json()) as any;
  if (res.status === 429) return 'RATE_LIMITED';
  if (res.status !== 200 || body.errors) throw new Error(`fault: ${res.status} ${JSON.stringify(body)}`);
  return (body.data.placeOrder.userErrors[0]?.code ?? body.data.placeOrder.order.status) as string;
}
const held = async (sku: string) => (await t.inventory(sku)).reserved;

describe('limits through several keys and addresses', () => {
  it('one customer through two storefront keys of one client and a public key with its buyer token from 8 addresses: the limit holds', async () => {
    await limited('ADV-L1', 100, 2);
    const token = (await t.gql(`mutation { createBuyerToken(input: { customerId: "vip" }) { token } }`, {}, K.shop))
      .body.data.createBuyerToken.token;
    const outcomes = await Promise.all([
      ...Array.from({ length: 4 }, () => place(K.shop, 'vip', 'ADV-L1')),
      ...Array.from({ length: 4 }, () => place(K.shopRotated, 'vip', 'ADV-L1')),
      ...Array.from({ length: 8 }, (_, i) =>
        place(K.web, 'vip', 'ADV-L1', { ip: `192.0.2.${i + 1}`, buyerToken: token }),
      ),
    ]);
    expect(outcomes.filter((o) => o === 'RESERVED')).toHaveLength(2);
    expect(outcomes.every((o) => ['RESERVED', 'PURCHASE_LIMIT', 'HOLD_LIMIT', 'RATE_LIMITED'].includes(o))).toBe(true);
    expect(await held('ADV-L1')).toBe(2);
    expect(await auditLedger(t.db, { stocked })).toEqual([]);
  });

  it('a scalper inventing customer ids from 5 addresses holds at most the limit per address, and nothing more with a forged token', async () => {
    await limited('ADV-L2', 100, 1);
    const outcomes = await Promise.all(
      Array.from({ length: 5 }, (_, a) =>
        Array.from({ length: 6 }, (_, i) => place(K.web, `anon-${a}-${i}`, 'ADV-L2', { ip: `198.51.100.${a + 1}` })),
      ).flat(),
    );
    expect(outcomes.filter((o) => o === 'RESERVED')).toHaveLength(5);
    const before = await fingerprint(t.db);
    const forged = await Promise.all(
      Array.from({ length: 5 }, (_, i) =>
        place(K.web, `anon-x-${i}`, 'ADV-L2', {
          ip: '198.51.100.1',
          buyerToken: `bt_${Buffer.from(JSON.stringify({ c: 'shop', u: `anon-x-${i}`, x: 9e9 })).toString('base64url')}.${'A'.repeat(43)}`,
        }),
      ),
    );
    expect(forged).toEqual(Array(5).fill('INVALID_INPUT'));
    expect(await fingerprint(t.db)).toEqual(before);
    expect(await held('ADV-L2')).toBe(5);
    expect(await auditLedger(t.db, { stocked })).toEqual([]);
  });

  it('the per-buyer rate limit counts one customer across keys of its client, aliases included, and a refusal writes nothing', async () => {
    await t.product('ADV-L3', 100);
    stocked['ADV-L3'] = 100;
    const aliased = (count: number, tag: string) =>
      `mutation { ${Array.from({ length: count }, (_, i) => `a${i}: placeOrder(input: { idempotencyKey: "adv-l3-${tag}-${i}", customerId: "rl-cust", lines: [{ sku: "ADV-L3", quantity: 1 }] }) { order { id } userErrors { code } }`).join(' ')} }`;
    expect((await t.gql(aliased(6, 'a'), {}, K.shop)).status).toBe(200);
    expect((await t.gql(aliased(6, 'b'), {}, K.shopRotated)).status).toBe(200); // 12 of 12
    const before = await fingerprint(t.db);
    const refused = await Promise.all([t.gql(aliased(1, 'c'), {}, K.shop), t.gql(aliased(3, 'd'), {}, K.shopRotated)]);
    expect(refused.map((r) => r.status)).toEqual([429, 429]);
    expect(await fingerprint(t.db)).toEqual(before);
    expect(await auditLedger(t.db, { stocked })).toEqual([]);
  });
});
