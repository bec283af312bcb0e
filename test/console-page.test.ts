// The shop's console (/console, docs/console.md) in headless Chromium against a real server process: sign-in with the
// key in sessionStorage only, a sale made through the API moving the stock table live, a stock-take with a stale
// expected count refused with the API's userError, a hold released from the console putting the unit back on the live
// product page, keyboard-only use with every control labelled, the CSP, the production switch, and screenshots at
// 1280 px and 390 px under test/artifacts/ (git-ignored).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdirSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { createTestDatabase, type TestDatabase } from './support/db.js';
import { spawnServer, type ServerProcess } from '../kit/server.js';
import { KEYS, CREATE_PRODUCT, PLACE_ORDER } from './support/app.js';
import { chromiumAvailable, launchChromium } from './support/browser.js';
import { loadConfig } from '../node/config.js';

const hasChromium = chromiumAvailable();
const ARTIFACTS = 'test/artifacts';
const PUBLIC_KEY = 'console_page_public_key_0001';
const API_KEYS = `public:web:${PUBLIC_KEY},storefront:${KEYS.storefront},admin:${KEYS.admin}`;

describe.skipIf(!hasChromium)('the shop console in headless Chromium', () => {
  let tdb: TestDatabase;
  let host: ServerProcess;
  let browser: Browser;
  const contexts: BrowserContext[] = [];
  beforeAll(async () => {
    mkdirSync(ARTIFACTS, { recursive: true });
    tdb = await createTestDatabase({ max: 2 });
    host = await spawnServer({
      env: {
        DATABASE_URL: tdb.url,
        API_KEYS,
        RELAY_POLL_MS: '200',
        MAX_ACTIVE_HOLDS: '0',
        RATE_LIMIT_BUYER_PER_WINDOW: '0',
      },
    });
    browser = await launchChromium();
  });
  afterAll(async () => {
    for (const c of contexts) await c.close().catch(() => {});
    await browser?.close();
    await host?.stop();
    await tdb?.drop();
  });

  async function gql(query: string, variables: Record<string, unknown>, key: string = KEYS.admin) {
    const res = await fetch(host.endpoint, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
      body: JSON.stringify({ query, variables }),
    });
    return (await res.json()) as any;
  }
  async function product(sku: string, initialStock: number, purchaseLimit?: number) {
    const r = await gql(CREATE_PRODUCT, {
      input: { sku, name: `Print ${sku}`, priceAmount: 9900, currencyCode: 'USD', initialStock, purchaseLimit },
    });
    expect(r.data.createProduct.userErrors).toEqual([]);
  }
  const sale = async (sku: string, customerId: string) => {
    const r = await gql(
      PLACE_ORDER,
      { input: { customerId, idempotencyKey: `${customerId}-${sku}`, lines: [{ sku, quantity: 1 }] } },
      KEYS.storefront,
    );
    expect(r.data.placeOrder.userErrors).toEqual([]);
    return r.data.placeOrder.order.id as string;
  };
  const inventory = async (sku: string) =>
    (await tdb.db.query(`SELECT available, reserved, sold FROM inventory WHERE sku = $1`, [sku])).rows[0];

  async function newPage(width = 1280, height = 900): Promise<Page> {
    const context = await browser.newContext({ viewport: { width, height }, deviceScaleFactor: 1 });
    contexts.push(context);
    return context.newPage();
  }
  /** A console signed in through its form (the key typed, never in the URL). */
  async function signedIn(width = 1280, height = 900): Promise<Page> {
    const page = await newPage(width, height);
    await page.goto(`${host.url}/console`);
    await page.fill('#admin-key', KEYS.admin);
    await page.click('button[type=submit]');
    await page.locator('#live').filter({ hasText: 'Live' }).waitFor({ timeout: 15_000 });
    return page;
  }
  const cell = (p: Page, sku: string, col: string) => p.locator(`#stock-${sku} td[data-col=${col}]`);
  const shot = (p: Page, name: string) => p.screenshot({ path: `${ARTIFACTS}/${name}.png`, fullPage: true });

  it('serves the page with a strict CSP, no inline script, and its script from this host only', async () => {
    const res = await fetch(`${host.url}/console`);
    expect(res.status).toBe(200);
    const csp = res.headers.get('content-security-policy')!;
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("default-src 'none'");
    expect(csp).not.toContain('unsafe-inline');
    expect(csp).not.toContain('http');
    const html = await res.text();
    expect([...html.matchAll(/<script\b([^>]*)>/g)].map((m) => m[1])).toEqual([
      ' type="module" src="/console/assets/console.js"',
    ]);
    const js = await fetch(`${host.url}/console/assets/console.js`);
    expect(js.status).toBe(200);
    expect(js.headers.get('content-type')).toMatch(/javascript/);
    expect((await js.text()).length).toBeGreaterThan(10_000); // preact, htm and graphql-ws bundled in
  });

  it('signs in with an admin key kept in sessionStorage only, refuses other keys, and reports no CSP violation', async () => {
    const page = await newPage();
    const violations: string[] = [];
    page.on('console', (m) => {
      if (/Content Security Policy|Refused to/.test(m.text())) violations.push(m.text());
    });
    await page.goto(`${host.url}/console`);
    await page.fill('#admin-key', KEYS.storefront);
    await page.click('button[type=submit]');
    await page.locator('#signin-error').filter({ hasText: 'admin' }).waitFor();
    await page.fill('#admin-key', KEYS.admin);
    await page.click('button[type=submit]');
    await page.locator('#live').filter({ hasText: 'Live' }).waitFor({ timeout: 15_000 });
    expect(page.url()).toBe(`${host.url}/console`);
    expect(page.url()).not.toContain(KEYS.admin);
    const storage = await page.evaluate(() => ({
      session: Object.fromEntries(Object.entries(sessionStorage)),
      local: Object.keys(localStorage),
      cookie: document.cookie,
    }));
    expect(storage).toEqual({ session: { 'lastunit.console.adminKey': KEYS.admin }, local: [], cookie: '' });
    // the same tab keeps it across a reload; signing out forgets it
    await page.reload();
    await page.locator('#live').filter({ hasText: 'Live' }).waitFor({ timeout: 15_000 });
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.locator('#admin-key').waitFor();
    expect(await page.evaluate(() => sessionStorage.length)).toBe(0);
    expect(violations).toEqual([]);
  });

  it('shows a sale made through the API live: available down, held up, sold after payment, back on sale when cancelled from the page', async () => {
    await product('CON-LIVE', 5, 2);
    const page = await signedIn();
    await expect.poll(() => cell(page, 'CON-LIVE', 'available').textContent()).toBe('5');
    expect(await page.locator('#stock-CON-LIVE').textContent()).toContain('2'); // the purchase limit
    const orderId = await sale('CON-LIVE', 'live-buyer-1');
    await expect.poll(() => cell(page, 'CON-LIVE', 'available').textContent(), { timeout: 10_000 }).toBe('4');
    await expect.poll(() => cell(page, 'CON-LIVE', 'held').textContent(), { timeout: 10_000 }).toBe('1');
    // and the hold is listed with its countdown
    await expect
      .poll(() => page.locator('#holds .countdown').first().textContent(), { timeout: 10_000 })
      .toMatch(/^\d+:\d\d$/);
    expect(await inventory('CON-LIVE')).toEqual({ available: 4, reserved: 1, sold: 0 });
    // paid through the API: the hold becomes a sale on the page, and the order is listed as confirmed
    const paid = await gql(
      `mutation($input: PayOrderInput!) { payOrder(input: $input) { order { status } userErrors { code message } } }`,
      { input: { orderId, payment: { provider: 'sandbox', token: 'tok_approve' } } },
      KEYS.storefront,
    );
    expect(paid.data.payOrder).toMatchObject({ order: { status: 'CONFIRMED' }, userErrors: [] });
    await expect.poll(() => cell(page, 'CON-LIVE', 'sold').textContent(), { timeout: 15_000 }).toBe('1');
    expect(await cell(page, 'CON-LIVE', 'held').textContent()).toBe('0');
    // cancelled from the page with restock: the unit is on sale again
    const cancel = page.getByRole('button', { name: `Cancel order ${orderId.slice(0, 8)} and restock` });
    await cancel.waitFor({ timeout: 10_000 });
    await cancel.click();
    await page.locator('#holds-msg').filter({ hasText: 'units restocked' }).waitFor({ timeout: 10_000 });
    await expect.poll(() => inventory('CON-LIVE'), { timeout: 10_000 }).toEqual({ available: 5, reserved: 0, sold: 0 });
    await expect.poll(() => cell(page, 'CON-LIVE', 'available').textContent(), { timeout: 10_000 }).toBe('5');
  });

  it('refuses a stock-take whose expected count went stale, showing the API userError, and applies a fresh one', async () => {
    await product('CON-STALE', 5);
    const page = await signedIn();
    await expect.poll(() => cell(page, 'CON-STALE', 'available').textContent()).toBe('5');
    await page.getByRole('button', { name: 'Adjust CON-STALE' }).click();
    await page.locator('#expected-CON-STALE').filter({ hasText: 'still 5' }).waitFor();
    // another staff member's sale lands while this form is open
    await sale('CON-STALE', 'stale-buyer');
    await expect.poll(() => cell(page, 'CON-STALE', 'available').textContent(), { timeout: 10_000 }).toBe('4');
    await page.fill('#count-CON-STALE', '20');
    await page.getByRole('button', { name: 'Set stock' }).click();
    await page.locator('#msg-CON-STALE').filter({ hasText: 'Refused' }).waitFor();
    expect(await page.locator('#msg-CON-STALE').textContent()).toMatch(/^Refused: STALE: /);
    expect(await inventory('CON-STALE')).toMatchObject({ available: 4 });
    await shot(page, 'console-stale-refused');
    // reopened, the form counts against what is there now
    await page.getByRole('button', { name: 'Adjust CON-STALE' }).click();
    await page.getByRole('button', { name: 'Adjust CON-STALE' }).click();
    await page.locator('#expected-CON-STALE').filter({ hasText: 'still 4' }).waitFor();
    await page.fill('#count-CON-STALE', '20');
    await page.getByRole('button', { name: 'Set stock' }).click();
    await page.locator('#msg-CON-STALE').filter({ hasText: 'Stock set: 20 available' }).waitFor();
    expect(await inventory('CON-STALE')).toMatchObject({ available: 20 });
  });

  it('releases a shopper hold from the console, and the live product page offers the unit again', async () => {
    await product('CON-REL', 1);
    const shopper = await newPage(390, 844);
    await shopper.goto(`${host.url}/products/CON-REL?key=${PUBLIC_KEY}`);
    await shopper.locator('#live').filter({ hasText: 'Live:' }).waitFor();
    await shopper.click('#buy');
    await shopper.locator('#status').filter({ hasText: 'reserved for you' }).waitFor();
    const other = await newPage(390, 844);
    await other.goto(`${host.url}/products/CON-REL?key=${PUBLIC_KEY}`);
    await other.locator('#badge-CON-REL').filter({ hasText: 'Sold out' }).waitFor({ timeout: 10_000 });

    const page = await signedIn();
    const release = page.getByRole('button', { name: /Release hold of order .* \(1 × CON-REL\)/ });
    await release.waitFor({ timeout: 10_000 });
    await release.click();
    await page.locator('#holds-msg').filter({ hasText: 'back on sale' }).waitFor();
    await other.locator('#badge-CON-REL').filter({ hasText: 'Available' }).waitFor({ timeout: 10_000 });
    expect(await other.locator('#buy').isDisabled()).toBe(false);
    expect(await inventory('CON-REL')).toEqual({ available: 1, reserved: 0, sold: 0 });
    await expect.poll(() => cell(page, 'CON-REL', 'available').textContent(), { timeout: 10_000 }).toBe('1');
  });

  it('works from the keyboard alone, and every control has a name', async () => {
    await product('CON-KEY', 3);
    const page = await newPage();
    await page.goto(`${host.url}/console`);
    await page.keyboard.press('Tab');
    expect(await page.evaluate(() => document.activeElement?.id)).toBe('admin-key');
    await page.keyboard.type(KEYS.admin);
    await page.keyboard.press('Enter');
    await page.locator('#live').filter({ hasText: 'Live' }).waitFor({ timeout: 15_000 });
    await expect.poll(() => cell(page, 'CON-KEY', 'available').textContent()).toBe('3');
    // Tab until the row's Adjust button has focus (nothing but the keyboard), open it, restock by keyboard
    const focused = () => page.evaluate(() => document.activeElement?.textContent?.trim() ?? '');
    let steps = 0;
    while ((await focused()) !== 'Adjust CON-KEY' && steps++ < 80) await page.keyboard.press('Tab');
    expect(await focused()).toBe('Adjust CON-KEY');
    await page.keyboard.press('Enter');
    await page.keyboard.press('Tab');
    expect(await page.evaluate(() => document.activeElement?.id)).toBe('restock-CON-KEY');
    await page.keyboard.type('2');
    await page.keyboard.press('Enter');
    await page.locator('#msg-CON-KEY').filter({ hasText: 'Restocked: 5 available' }).waitFor();
    expect(await inventory('CON-KEY')).toMatchObject({ available: 5 });
    // on a fresh load the skip link is the first stop, and it moves focus to the panels
    await page.reload();
    await page.locator('#live').filter({ hasText: 'Live' }).waitFor({ timeout: 15_000 });
    await page.keyboard.press('Tab');
    expect(await focused()).toBe('Skip to the panels');
    await page.keyboard.press('Enter');
    expect(await page.evaluate(() => document.activeElement?.id)).toBe('panels');

    const unnamed = await page.evaluate(() => {
      const name = (e: Element) =>
        (
          e.getAttribute('aria-label') ||
          (e as HTMLInputElement).labels?.[0]?.textContent ||
          e.textContent ||
          ''
        ).trim();
      return [...document.querySelectorAll('button, input, select, a[href]')]
        .filter((e) => !name(e))
        .map((e) => e.outerHTML.slice(0, 80));
    });
    expect(unnamed).toEqual([]);
    const unlabelledInputs = await page.evaluate(
      () =>
        [...document.querySelectorAll('input, select')].filter((e) => !(e as HTMLInputElement).labels?.length).length,
    );
    expect(unlabelledInputs).toBe(0);
  });

  it('shows a failing marketplace push with its error, and Retry push sends it again at once', async () => {
    // a marketplace that answers 503 until told to recover; it counts the pushes it receives
    let healthy = false;
    let received = 0;
    const market: Server = createServer((req, res) => {
      received++;
      req.resume();
      res.writeHead(healthy ? 200 : 503, { 'content-type': 'application/json' }).end('{}');
    });
    await new Promise<void>((r) => market.listen(0, '127.0.0.1', r));
    try {
      await product('CON-CHAN', 7);
      const endpoint = `http://127.0.0.1:${(market.address() as AddressInfo).port}`;
      const created = await gql(
        `mutation($input: CreateChannelInput!) { createChannel(input: $input) { channel { id } userErrors { message } } }`,
        { input: { id: 'con-market', name: 'Console Market', kind: 'SANDBOX', endpoint } },
      );
      expect(created.data.createChannel.userErrors).toEqual([]);
      const listing = async () =>
        (
          await tdb.db.query(
            `SELECT attempts, pushed_quantity, last_error FROM channel_listings WHERE channel_id = 'con-market' AND sku = 'CON-CHAN'`,
          )
        ).rows[0];
      // failing pushes back off: wait until the next attempt is seconds away
      await expect.poll(async () => (await listing())?.attempts ?? 0, { timeout: 30_000 }).toBeGreaterThanOrEqual(4);
      const page = await signedIn();
      const row = page.locator('#listing-con-market-CON-CHAN');
      await row.filter({ hasText: 'HTTP 503' }).waitFor({ timeout: 10_000 });
      expect(await row.textContent()).toContain('waiting');
      const before = (await listing()).attempts;
      const seen = received;
      await page.getByRole('button', { name: 'Retry push of CON-CHAN to Console Market' }).click();
      await page.locator('#channels-msg').filter({ hasText: 'sent again' }).waitFor();
      // the backoff was forgotten and a push went out: the failure count starts again from the retry
      await expect.poll(() => received, { timeout: 10_000 }).toBeGreaterThan(seen);
      await expect.poll(async () => (await listing()).attempts, { timeout: 10_000 }).toBeLessThan(before);
      // the marketplace recovers; one more retry and the listing is in sync without waiting out the backoff
      healthy = true;
      const retry = page.getByRole('button', { name: 'Retry push of CON-CHAN to Console Market' });
      await retry.click();
      await expect.poll(async () => (await listing()).pushed_quantity, { timeout: 10_000 }).toBe(7);
      await row.filter({ hasText: 'in sync' }).waitFor({ timeout: 10_000 });
      expect(await retry.count()).toBe(0);
      // a listing with nothing to send: the API's userError, shown as is
      const r = await gql(
        `mutation($input: RetryChannelPushInput!) { retryChannelPush(input: $input) { listing { sku } userErrors { code message } } }`,
        { input: { channelId: 'con-market', sku: 'CON-CHAN' } },
      );
      expect(r.data.retryChannelPush).toMatchObject({ listing: null, userErrors: [{ code: 'INVALID_INPUT' }] });
    } finally {
      await new Promise((r) => market.close(r));
    }
  });

  it('says which of deliveries and drops this server has (webhook endpoints: yes; drops: not available)', async () => {
    const page = await signedIn();
    await page.locator('#deliveries-state').filter({ hasText: "This server's API has webhookEndpoints" }).waitFor();
    await page.locator('#drops-state').filter({ hasText: 'Not available on this server' }).waitFor();
  });

  it('fits 1280 px and a 390 px phone (no sideways scrolling of the page) and saves both screenshots', async () => {
    await product('CON-SHOT', 12, 2);
    await sale('CON-SHOT', 'shot-buyer');
    for (const [width, height] of [
      [1280, 900],
      [390, 844],
    ] as const) {
      const page = await signedIn(width, height);
      await expect.poll(() => cell(page, 'CON-SHOT', 'held').textContent(), { timeout: 10_000 }).toBe('1');
      await page.locator('#holds .countdown').first().waitFor();
      // the sale is on the chart: its second has a claim and a hold (this server's own counters)
      await expect
        .poll(() => page.locator('#chart-orders svg').getAttribute('aria-label'), { timeout: 10_000 })
        .toMatch(/claims [1-9]\d*, holds [1-9]/);
      expect(await page.locator('#chart-orders polyline.claims').getAttribute('points')).toMatch(/\d,\d/);
      expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBe(width);
      await shot(page, `console-${width}`);
    }
  });
});

describe('the console switch', () => {
  it('is on outside production and off in production unless CONSOLE=on', () => {
    expect(loadConfig({}).http.console).toBe(true);
    expect(loadConfig({ CONSOLE: 'off' }).http.console).toBe(false);
    const production = {
      NODE_ENV: 'production',
      DATABASE_URL: 'postgres://127.0.0.1/x',
      API_KEYS: 'admin:ops:console_switch_admin_key_0001',
      PAYMENT_PROVIDER: 'sandbox',
      ALLOW_SANDBOX_PAYMENTS: 'true',
      PAYMENT_WEBHOOK_SECRET: 'whsec_console_switch_own_secret_1',
      BUYER_TOKEN_SECRET: 'bts_console_switch_own_secret_0123456789',
      HOST: '127.0.0.1',
    };
    expect(loadConfig(production).http.console).toBe(false);
    expect(loadConfig({ ...production, CONSOLE: 'on' }).http.console).toBe(true);
  });

  it('answers 404 on every console path when off', async () => {
    const tdb = await createTestDatabase({ max: 1 });
    const off = await spawnServer({ env: { DATABASE_URL: tdb.url, API_KEYS, CONSOLE: 'off' } });
    try {
      for (const path of ['/console', '/console/assets/console.js']) {
        const res = await fetch(`${off.url}${path}`);
        expect([path, res.status]).toEqual([path, 404]);
        expect(await res.text()).toContain('CONSOLE=off');
      }
    } finally {
      await off.stop();
      await tdb.drop();
    }
  });
});
