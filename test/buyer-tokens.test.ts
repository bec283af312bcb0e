// A buyer identity the browser cannot invent (I12, I14 on public keys): without a buyer token a public key's orders
// count by the client's address for both limits, whatever customerId the page sends; with one (minted by the shop's
// backend with its storefront key, createBuyerToken) they count the customer the shop vouched for, from any address.
import { describe, expect, it } from 'vitest';
import { KEYS, startTestApp } from './support/app.js';
import { auditLedger } from './support/ledger.js';

const K = {
  web: 'buyer_tokens_public_key_01',
  otherWeb: 'buyer_tokens_public_key_02',
  shop: 'buyer_tokens_storefront_01',
};
const t = await startTestApp({
  keys: [
    { role: 'storefront', client: 'shop', key: K.shop },
    { role: 'public', client: 'shop', key: K.web },
    { role: 'public', client: 'elsewhere', key: K.otherWeb },
    { role: 'storefront', key: KEYS.storefront },
    { role: 'admin', key: KEYS.admin },
  ],
  maxActiveHolds: 3,
  clientIp: (c) => c.req.header('x-test-ip'),
  buyerTokenSecret: 'buyer-token-secret-for-tests-0123456789',
});

const PLACE = `mutation($i: PlaceOrderInput!) { placeOrder(input: $i) { order { id status } userErrors { code field sku } } }`;
let n = 0;
/** placeOrder from a browser at `ip` with the public key, optionally presenting a buyer token. */
async function fromBrowser(ip: string, customerId: string, sku: string, buyerToken?: string, key = K.web) {
  const res = await t.app.request('/graphql', {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}`, 'x-test-ip': ip },
    body: JSON.stringify({
      query: PLACE,
      variables: { i: { idempotencyKey: `bt-${++n}`, customerId, lines: [{ sku, quantity: 1 }], buyerToken } },
    }),
  });
  const body = (await res.json()) as any;
  if (res.status !== 200 || body.errors) throw new Error(`fault: ${res.status} ${JSON.stringify(body)}`);
  return body.data.placeOrder as {
    order: { id: string; status: string } | null;
    userErrors: { code: string; field: string[]; sku: string | null }[];
  };
}
const outcome = (p: Awaited<ReturnType<typeof fromBrowser>>) => p.userErrors[0]?.code ?? p.order!.status;
const tally = (all: string[]) => all.reduce<Record<string, number>>((m, c) => ({ ...m, [c]: (m[c] ?? 0) + 1 }), {});
async function mint(customerId: string, ttlSeconds?: number, key = K.shop) {
  const r = await t.gql(
    `mutation($i: CreateBuyerTokenInput!) { createBuyerToken(input: $i) { token expiresAt userErrors { code field } } }`,
    { i: { customerId, ttlSeconds } },
    key,
  );
  return r;
}
async function limited(sku: string, stock: number, limit: number) {
  await t.product(sku, stock);
  const r = await t.gql(
    `mutation { setPurchaseLimit(input: { sku: "${sku}", limit: ${limit} }) { userErrors { code } } }`,
    {},
    KEYS.admin,
  );
  expect(r.body.data.setPurchaseLimit.userErrors).toEqual([]);
}

describe('a public key without a buyer token', () => {
  it('counts one address as one customer for a purchase limit, whatever customerIds it invents', async () => {
    await limited('BT-DROP', 20, 1);
    const five = await Promise.all(
      Array.from({ length: 5 }, (_, i) => fromBrowser('203.0.113.7', `anon-${i}`, 'BT-DROP')),
    );
    // one unit held; the others refused by the purchase limit (or, racing it, by the same address's hold limit of 3)
    expect(five.map(outcome).filter((o) => o === 'RESERVED')).toHaveLength(1);
    expect(
      five
        .map(outcome)
        .filter((o) => o !== 'RESERVED')
        .every((o) => o === 'PURCHASE_LIMIT' || o === 'HOLD_LIMIT'),
    ).toBe(true);
    expect(await t.inventory('BT-DROP')).toEqual({ available: 19, reserved: 1, sold: 0 });
    // another address is another buyer
    expect(outcome(await fromBrowser('198.51.100.8', 'anon-0', 'BT-DROP'))).toBe('RESERVED');
    expect(await auditLedger(t.db, { stocked: { 'BT-DROP': 20 } })).toEqual([]);
  });

  it('counts its holds per address too (I14)', async () => {
    await t.product('BT-HOLDS', 50);
    const all = await Promise.all(
      Array.from({ length: 6 }, (_, i) => fromBrowser('203.0.113.30', `h-${i}`, 'BT-HOLDS')),
    );
    expect(tally(all.map(outcome))).toEqual({ RESERVED: 3, HOLD_LIMIT: 3 });
  });
});

describe('createBuyerToken', () => {
  it('is minted by a storefront key for a customer, short-lived; a public key may not mint one', async () => {
    const before = Date.now();
    const r = await mint('cust-42', 600);
    expect(r.body.errors).toBeUndefined();
    const { token, expiresAt, userErrors } = r.body.data.createBuyerToken;
    expect(userErrors).toEqual([]);
    expect(token).toMatch(/^bt_[A-Za-z0-9_-]+\.[A-Za-z0-9_-]{43}$/);
    const exp = new Date(expiresAt).getTime();
    expect(exp).toBeGreaterThanOrEqual(before + 599_000);
    expect(exp).toBeLessThanOrEqual(Date.now() + 601_000);
    expect((await mint('cust-42', 0)).body.data.createBuyerToken.userErrors).toEqual([
      { code: 'INVALID_INPUT', field: ['input', 'ttlSeconds'] },
    ]);
    expect((await mint('cust-42', 86_401)).body.data.createBuyerToken.userErrors).toEqual([
      { code: 'INVALID_INPUT', field: ['input', 'ttlSeconds'] },
    ]);
    expect((await mint('c\u0000')).body.data.createBuyerToken.userErrors).toEqual([
      { code: 'INVALID_INPUT', field: ['input', 'customerId'] },
    ]);
    const byBrowser = await mint('cust-42', 600, K.web);
    expect([byBrowser.status, byBrowser.body.errors?.[0]?.extensions?.code]).toEqual([403, 'FORBIDDEN']);
  });

  it('makes a public key count the vouched customer, from any address, for the purchase limit and the hold limit', async () => {
    await limited('BT-VOUCH', 20, 2);
    const token = (await mint('vip-1')).body.data.createBuyerToken.token as string;
    const tries = await Promise.all(
      ['192.0.2.1', '192.0.2.2', '192.0.2.3'].map((ip) => fromBrowser(ip, 'vip-1', 'BT-VOUCH', token)),
    );
    expect(tally(tries.map(outcome))).toEqual({ RESERVED: 2, PURCHASE_LIMIT: 1 });
    // the hold limit counts the customer as well: one more hold on another product fills its 3, the next is refused
    await t.product('BT-VOUCH-2', 20);
    const third = await fromBrowser('192.0.2.9', 'vip-1', 'BT-VOUCH-2', token);
    expect(outcome(third)).toBe('RESERVED');
    expect(outcome(await fromBrowser('192.0.2.10', 'vip-1', 'BT-VOUCH-2', token))).toBe('HOLD_LIMIT');
    const { rows } = await t.db.query(
      `SELECT buyer, active FROM buyer_holds WHERE client_id = 'shop' AND buyer = 'customer:vip-1'`,
    );
    expect(rows).toEqual([{ buyer: 'customer:vip-1', active: 3 }]);
    // the storefront's own orders for the same customer of the same client count with them (one customer, one limit)
    await t.release(third.order!.id, K.shop);
    const server = await t.gql(
      PLACE,
      { i: { idempotencyKey: 'bt-server-1', customerId: 'vip-1', lines: [{ sku: 'BT-VOUCH', quantity: 1 }] } },
      K.shop,
    );
    expect(server.body.data.placeOrder.userErrors.map((e: any) => e.code)).toEqual(['PURCHASE_LIMIT']);
    expect(await auditLedger(t.db, { stocked: { 'BT-VOUCH': 20, 'BT-VOUCH-2': 20 } })).toEqual([]);
  });

  it('refuses, writing nothing, a token that is tampered with, expired, of another client, or for another customerId', async () => {
    await t.product('BT-BAD', 10);
    const token = (await mint('cust-7', 60)).body.data.createBuyerToken.token as string;
    const [payload, mac] = token.split('.') as [string, string];
    const claims = JSON.parse(Buffer.from(payload.slice(3), 'base64url').toString());
    const forged = `bt_${Buffer.from(JSON.stringify({ ...claims, u: 'someone-else' })).toString('base64url')}.${mac}`;
    const expired = `bt_${Buffer.from(JSON.stringify({ ...claims, x: Math.floor(Date.now() / 1000) - 1 })).toString('base64url')}.${mac}`;
    const orders = async () => (await t.db.query(`SELECT count(*)::int AS n FROM orders`)).rows[0].n;
    const before = await orders();
    for (const [bad, customerId, key, field] of [
      [forged, 'someone-else', K.web, 'buyerToken'],
      [expired, 'cust-7', K.web, 'buyerToken'],
      ['bt_not-a-token', 'cust-7', K.web, 'buyerToken'],
      [token, 'cust-7', K.otherWeb, 'buyerToken'], // minted for client "shop", presented with client "elsewhere"'s key
      [token, 'cust-8', K.web, 'customerId'], // the token vouches for cust-7 only
    ] as const) {
      const r = await fromBrowser('192.0.2.77', customerId, 'BT-BAD', bad, key);
      expect([r.order, r.userErrors.map((e) => [e.code, e.field])]).toEqual([
        null,
        [['INVALID_INPUT', ['input', field]]],
      ]);
    }
    expect(await orders()).toBe(before);
    expect(outcome(await fromBrowser('192.0.2.77', 'cust-7', 'BT-BAD', token))).toBe('RESERVED');
  });
});
