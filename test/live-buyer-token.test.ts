// The live page with the demo shop backend (node/live-shop.ts), in headless Chromium against a real server: the page
// asks POST /live/buyer-token for a buyer token (minted with the storefront key of its public key's client for a demo
// customer kept in an HttpOnly SameSite=Strict cookie), sends it with placeOrder, and the purchase limit counts that
// customer: a second order from the same browser is refused, a second browser is a customer of its own, although
// every browser here shares one address. A production start serves no such endpoint.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { createTestDatabase, type TestDatabase } from './support/db.js';
import { spawnServer, type ServerProcess } from '../kit/server.js';
import { KEYS, CREATE_PRODUCT } from './support/app.js';
import { chromiumAvailable, launchChromium } from './support/browser.js';
import { DEMO_CUSTOMER_COOKIE } from '../node/live-shop.js';
import { DEMO_SHOP_CLIENT } from '../node/demo-catalog.js';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const hasChromium = chromiumAvailable();
// one shop: the page's public key and the storefront key its backend mints with share the client `shop`
const PUBLIC_KEY = 'buyer_page_public_key_00001';
const STOREFRONT_KEY = 'buyer_page_storefront_key_01';
const API_KEYS = `public:shop:${PUBLIC_KEY},storefront:shop:${STOREFRONT_KEY},admin:${KEYS.admin}`;

describe.skipIf(!hasChromium)('the live page orders with a buyer token from the demo shop backend', () => {
  let tdb: TestDatabase;
  let host: ServerProcess;
  let browser: Browser;
  const contexts: BrowserContext[] = [];
  beforeAll(async () => {
    tdb = await createTestDatabase({ max: 2 });
    host = await spawnServer({ env: { DATABASE_URL: tdb.url, API_KEYS, RELAY_POLL_MS: '200' } });
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await host?.stop();
    await tdb?.drop();
  });

  async function product(sku: string, initialStock: number, purchaseLimit?: number) {
    const res = await fetch(host.endpoint, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${KEYS.admin}` },
      body: JSON.stringify({
        query: CREATE_PRODUCT,
        variables: {
          input: { sku, name: `Drop ${sku}`, priceAmount: 5000, currencyCode: 'USD', initialStock, purchaseLimit },
        },
      }),
    });
    expect(
      ((await res.json()) as { data: { createProduct: { userErrors: unknown[] } } }).data.createProduct.userErrors,
    ).toEqual([]);
  }
  /** A browser of its own (own cookies, own storage): one shopper. */
  async function shopper(sku: string): Promise<{ page: Page; context: BrowserContext }> {
    const context = await browser.newContext({ viewport: { width: 390, height: 844 } });
    contexts.push(context);
    const page = await context.newPage();
    await page.goto(`${host.url}/products/${sku}?key=${PUBLIC_KEY}`);
    await page.locator('#live').filter({ hasText: 'Live:' }).waitFor();
    await expect.poll(() => page.locator('#buy').isDisabled()).toBe(false);
    return { page, context };
  }
  const statusOf = (p: Page) => p.locator('#status');
  const reserve = async (p: Page) => {
    await p.click('#buy');
    await statusOf(p).filter({ hasText: 'reserved for you' }).waitFor();
  };
  const customerCookie = async (context: BrowserContext) =>
    (await context.cookies()).find((c) => c.name === DEMO_CUSTOMER_COOKIE);
  const ordersOf = async (sku: string) =>
    (
      await tdb.db.query(
        `SELECT o.customer_id, o.status FROM orders o JOIN order_lines l ON l.order_id = o.id WHERE l.sku = $1
         ORDER BY o.created_at`,
        [sku],
      )
    ).rows as { customer_id: string; status: string }[];

  it("counts the page's orders against the cookie's customer: a second order from that browser is refused PURCHASE_LIMIT, another browser buys", async () => {
    await product('DROP-1', 5, 1);
    const one = await shopper('DROP-1');
    await reserve(one.page);
    const cookie = await customerCookie(one.context);
    expect(cookie).toMatchObject({ httpOnly: true, sameSite: 'Strict', path: '/live' });
    expect(cookie!.value).toMatch(/^demo-[0-9a-f-]{36}$/);
    expect(await one.page.evaluate(() => document.cookie)).not.toContain(DEMO_CUSTOMER_COOKIE); // HttpOnly
    expect(await ordersOf('DROP-1')).toEqual([{ customer_id: cookie!.value, status: 'RESERVED' }]);

    // paid, then the same browser tries again: its customer has had its one
    await one.page.click('#pay');
    await statusOf(one.page).filter({ hasText: 'Paid' }).waitFor();
    await one.page.click('#buy');
    await statusOf(one.page).filter({ hasText: 'not accepted' }).waitFor();
    const refused = await tdb.db.query(
      `SELECT o.customer_id, o.status, o.rejection->>'code' AS rejection_code FROM orders o JOIN order_lines l ON l.order_id = o.id
        WHERE l.sku = 'DROP-1' ORDER BY o.created_at`,
    );
    expect(refused.rows.map((r) => [r.customer_id, r.status, r.rejection_code])).toEqual([
      [cookie!.value, 'CONFIRMED', null],
      [cookie!.value, 'REJECTED', 'PURCHASE_LIMIT'],
    ]);

    // another browser on the same address is another customer (without buyer tokens both would count 127.0.0.1)
    const two = await shopper('DROP-1');
    await reserve(two.page);
    const other = await customerCookie(two.context);
    expect(other!.value).not.toBe(cookie!.value);
    expect((await ordersOf('DROP-1')).at(-1)).toEqual({ customer_id: other!.value, status: 'RESERVED' });
    expect(
      (await tdb.db.query(`SELECT available, reserved, sold FROM inventory WHERE sku = 'DROP-1'`)).rows[0],
    ).toEqual({ available: 3, reserved: 1, sold: 1 });
  });

  it('asks for a new token when the one it holds has expired, and when placeOrder refuses the one it sent', async () => {
    await product('RENEW-1', 10);
    const { page, context } = await shopper('RENEW-1');
    // the shop backend's answers as the page receives them: tokens 1 and 2 marked expired, token 3 altered
    let asked = 0;
    await page.route('**/live/buyer-token', async (route) => {
      const res = await route.fetch();
      const body = await res.json();
      asked++;
      if (asked <= 2) body.expiresAt = new Date(Date.now() - 1000).toISOString();
      if (asked === 3) body.token = `${body.token.slice(0, -2)}${body.token.endsWith('AA') ? 'BB' : 'AA'}`;
      await route.fulfill({ response: res, json: body });
    });
    const reserveAndRelease = async () => {
      await reserve(page);
      await page.click('#release');
      await statusOf(page).filter({ hasText: 'You released it' }).waitFor();
    };
    await reserveAndRelease();
    expect(asked).toBe(1);
    // the token it holds is past its expiry: a new one before the order
    await reserveAndRelease();
    expect(asked).toBe(2);
    // token 3 is refused by placeOrder (not a valid buyer token): renewed (4), the same attempt sent again
    await reserve(page);
    expect(asked).toBe(4);
    const cookie = (await customerCookie(context))!.value;
    // the refused attempt wrote nothing: three orders, all the cookie's customer's
    expect(await ordersOf('RENEW-1')).toEqual([
      { customer_id: cookie, status: 'CANCELLED' },
      { customer_id: cookie, status: 'CANCELLED' },
      { customer_id: cookie, status: 'RESERVED' },
    ]);
  });

  it('answers POST /live/buyer-token only for a public key, with a token that key may order with', async () => {
    const ask = (key?: string, cookie?: string) =>
      fetch(`${host.url}/live/buyer-token`, {
        method: 'POST',
        headers: { ...(key ? { authorization: `Bearer ${key}` } : {}), ...(cookie ? { cookie } : {}) },
      });
    expect((await ask()).status).toBe(401);
    expect((await ask(STOREFRONT_KEY)).status).toBe(403);
    expect((await ask(KEYS.admin)).status).toBe(403);
    const res = await ask(PUBLIC_KEY);
    expect(res.status).toBe(200);
    expect(res.headers.get('cache-control')).toBe('no-store');
    const setCookie = res.headers.get('set-cookie')!;
    expect(setCookie).toMatch(new RegExp(`^${DEMO_CUSTOMER_COOKIE}=demo-[0-9a-f-]{36};`));
    expect(setCookie).toMatch(/HttpOnly/);
    expect(setCookie).toMatch(/SameSite=Strict/);
    const minted = (await res.json()) as { token: string; expiresAt: string; customerId: string };
    expect(setCookie).toContain(`=${minted.customerId};`);
    // the same cookie, the same customer; a forged cookie value is not taken
    const again = (await (await ask(PUBLIC_KEY, `${DEMO_CUSTOMER_COOKIE}=${minted.customerId}`)).json()) as {
      customerId: string;
    };
    expect(again.customerId).toBe(minted.customerId);
    const forged = (await (await ask(PUBLIC_KEY, `${DEMO_CUSTOMER_COOKIE}=vip`)).json()) as { customerId: string };
    expect(forged.customerId).toMatch(/^demo-/);
    // valid for 900 s by default
    const ttl = (Date.parse(minted.expiresAt) - Date.now()) / 1000;
    expect(ttl).toBeGreaterThan(800);
    expect(ttl).toBeLessThanOrEqual(900);
  });
});

describe('a production start', () => {
  it('serves no shop backend, and refuses LIVE_SHOP_BACKEND=demo', async () => {
    const tdb = await createTestDatabase({ max: 1 });
    const prod = {
      NODE_ENV: 'production',
      DATABASE_URL: tdb.url,
      API_KEYS: `public:shop:prod_buyer_page_public_key_01,storefront:shop:prod_buyer_page_storefront_k1`,
      PAYMENT_PROVIDER: 'sandbox',
      ALLOW_SANDBOX_PAYMENTS: 'true',
      PAYMENT_WEBHOOK_SECRET: 'whsec_buyer_page_prod_secret_0123',
      BUYER_TOKEN_SECRET: 'bts_buyer_page_prod_secret_0123456789',
      HOST: '127.0.0.1',
    };
    try {
      const host = await spawnServer({ env: prod });
      try {
        const res = await fetch(`${host.url}/live/buyer-token`, {
          method: 'POST',
          headers: { authorization: 'Bearer prod_buyer_page_public_key_01' },
        });
        expect(res.status).toBe(404);
        const page = await (await fetch(`${host.url}/products/NONE`)).text();
        expect(page).not.toContain('buyer-token');
      } finally {
        await host.stop();
      }
      await expect(spawnServer({ env: { ...prod, LIVE_SHOP_BACKEND: 'demo' } })).rejects.toThrow(
        /LIVE_SHOP_BACKEND: demo mints buyer tokens for any browser that asks: refused with NODE_ENV=production/,
      );
    } finally {
      await tdb.drop();
    }
  });
});

describe('the demo keys', () => {
  it("share one client between the public and storefront keys, also in an older demo-keys.json, so the page's tokens count", async () => {
    const dataDir = mkdtempSync(path.join(os.tmpdir(), 'lastunit-demo-shop-'));
    // a file from before the demo keys named clients: every key its own derived client
    const old = [
      { role: 'public', key: 'lu_public_0123456789abcdef01234567' },
      { role: 'storefront', key: 'lu_storefront_0123456789abcdef012345' },
      { role: 'partner', key: 'lu_partner_0123456789abcdef01234567' },
      { role: 'admin', key: 'lu_admin_0123456789abcdef0123456789' },
    ];
    writeFileSync(path.join(dataDir, 'demo-keys.json'), JSON.stringify(old));
    const host = await spawnServer({
      env: { DATA_DIR: dataDir, DATABASE_URL: '', API_KEYS: '', NODE_ENV: 'development' },
    });
    try {
      const keys = JSON.parse(readFileSync(path.join(dataDir, 'demo-keys.json'), 'utf8')) as typeof old;
      expect(keys.map((k) => [k.role, k.key, (k as { client?: string }).client])).toEqual([
        ['public', old[0]!.key, DEMO_SHOP_CLIENT],
        ['storefront', old[1]!.key, DEMO_SHOP_CLIENT],
        ['partner', old[2]!.key, 'acme'],
        ['admin', old[3]!.key, undefined],
      ]);
      expect(host.output()).toContain(`(client ${DEMO_SHOP_CLIENT})`);
      // the page's shop backend mints with the storefront key; the public key orders with that token
      const res = await fetch(`${host.url}/live/buyer-token`, {
        method: 'POST',
        headers: { authorization: `Bearer ${old[0]!.key}` },
      });
      expect(res.status).toBe(200);
      const buyer = (await res.json()) as { token: string; customerId: string };
      const placed = await fetch(host.endpoint, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${old[0]!.key}` },
        body: JSON.stringify({
          query: `mutation($input: PlaceOrderInput!) { placeOrder(input: $input) { order { status } userErrors { code } } }`,
          variables: {
            input: {
              idempotencyKey: 'demo-shop-1',
              customerId: buyer.customerId,
              buyerToken: buyer.token,
              lines: [{ sku: 'MUG-WHT', quantity: 1 }],
            },
          },
        }),
      });
      expect(((await placed.json()) as { data: unknown }).data).toEqual({
        placeOrder: { order: { status: 'RESERVED' }, userErrors: [] },
      });
    } finally {
      expect(await host.stop('SIGTERM', 20_000)).toBe(0);
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
