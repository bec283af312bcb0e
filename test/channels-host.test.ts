// Channels in the real Node host (a child process): its pusher sends listed quantities the moment a storefront change
// commits, marketplace orders from the sandbox arrive as signed webhooks, and the live page shows each channel's
// listed quantity for a SKU on its admin view.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from './support/db.js';
import { spawnServer, type ServerProcess } from '../kit/server.js';
import { KEYS, CREATE_PRODUCT } from './support/app.js';
import { startMarketplaceSandbox, type MarketplaceSandbox } from '../channels/sandbox-marketplace.js';
import { chromiumAvailable, launchChromium } from './support/browser.js';

const hasChromium = chromiumAvailable();

const API_KEYS = `storefront:${KEYS.storefront},admin:${KEYS.admin}`;

describe('channels in the Node host', () => {
  let tdb: TestDatabase;
  let host: ServerProcess;
  let m: MarketplaceSandbox;
  beforeAll(async () => {
    tdb = await createTestDatabase({ max: 2 });
    host = await spawnServer({ env: { DATABASE_URL: tdb.url, API_KEYS, CHANNEL_PUSH_POLL_MS: '200' } });
    m = await startMarketplaceSandbox({ maxRequestsPerSecond: 0 });
  });
  afterAll(async () => {
    await m?.close();
    await host?.stop();
    await tdb?.drop();
  });
  const gql = async (key: string, query: string, variables: Record<string, unknown> = {}) => {
    const res = await fetch(host.endpoint, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
      body: JSON.stringify({ query, variables }),
    });
    const body = (await res.json()) as any;
    if (body.errors) throw new Error(JSON.stringify(body.errors));
    return body.data;
  };
  const eventually = async (what: string, ok: () => boolean | Promise<boolean>) => {
    for (let i = 0; i < 200; i++) {
      if (await ok()) return;
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error(`never: ${what}`);
  };

  it('pushes after each committed change, takes marketplace orders, and the live page lists per channel', async () => {
    expect(
      (
        await gql(KEYS.admin, CREATE_PRODUCT, {
          input: { sku: 'HOST-1', name: 'Host one', priceAmount: 100, currencyCode: 'USD', initialStock: 5 },
        })
      ).createProduct.userErrors,
    ).toEqual([]);
    const c = await gql(
      KEYS.admin,
      `mutation($i: CreateChannelInput!) { createChannel(input: $i) { webhookSecret userErrors { code } } }`,
      {
        i: { id: 'mkt', name: 'The Market', kind: 'SANDBOX', endpoint: m.url, buffer: 1, maxPushesPerSecond: 50 },
      },
    );
    m.configure({ webhookUrl: `${host.url}/webhooks/channels/mkt`, webhookSecret: c.createChannel.webhookSecret });
    await eventually('the opening listing', () => m.listed('HOST-1') === 4);
    const placed = await gql(
      KEYS.storefront,
      `mutation($i: PlaceOrderInput!) { placeOrder(input: $i) { order { status } } }`,
      {
        i: { idempotencyKey: 'host-1', customerId: 'c1', lines: [{ sku: 'HOST-1', quantity: 2 }] },
      },
    );
    expect(placed.placeOrder.order.status).toBe('RESERVED');
    await eventually('the push after the claim', () => m.listed('HOST-1') === 2);
    expect(m.buy('HOST-1')).toBeTruthy();
    await m.idle();
    await eventually('the marketplace order applied and pushed back', async () => {
      const { rows } = await tdb.db.query(`SELECT available, sold FROM inventory WHERE sku = 'HOST-1'`);
      return rows[0].sold === 1 && rows[0].available === 2 && m.listed('HOST-1') === 1;
    });
    const page = await (await fetch(`${host.url}/admin/products/HOST-1`)).text();
    expect(page).toContain('id="channels"');
    // the acknowledgement is recorded just after the marketplace answered
    // channel names and listed quantities only to an admin key: 401 without a known key, 403 for another role
    const refusals = [
      [{}, 401],
      [{ authorization: 'Bearer lu_not_a_key_at_all' }, 401],
      [{ authorization: KEYS.admin }, 401],
      [{ authorization: `Bearer ${KEYS.storefront}` }, 403],
    ] as const;
    for (const [headers, status] of refusals) {
      const refused = await fetch(`${host.url}/admin/products/HOST-1/channels`, { headers });
      expect([refused.status, ((await refused.json()) as any).channels]).toEqual([status, undefined]);
    }
    let listed: any;
    await eventually('the listing recorded as pushed', async () => {
      listed = await (
        await fetch(`${host.url}/admin/products/HOST-1/channels`, {
          headers: { authorization: `Bearer ${KEYS.admin}` },
        })
      ).json();
      return listed.channels[0]?.pending === false;
    });
    expect(listed.channels).toEqual([{ id: 'mkt', name: 'The Market', listed: 1, desired: 1, pending: false }]);
    const metrics = await (await fetch(`${host.url}/metrics`)).text();
    expect(metrics).toMatch(/lastunit_channel_push_lag_seconds_count\{channel="mkt"\} [1-9]/);
  });

  it.skipIf(!hasChromium)(
    "the admin view of a product renders each channel's listed quantity and follows a change",
    async () => {
      const browser = await launchChromium();
      try {
        const page = await browser.newPage({ viewport: { width: 390, height: 844 } });
        // the admin view reads with the admin key given in ?key= (kept for the tab)
        await page.goto(`${host.url}/admin/products/HOST-1?key=${KEYS.admin}`);
        const row = page.locator('#channel-mkt');
        await row.filter({ hasText: 'The Market' }).filter({ hasText: 'in sync' }).waitFor();
        expect(await row.locator('td').allTextContents()).toEqual(['The Market', '1', '1', 'in sync']);
        // a restock: the page shows the new listed quantity once the marketplace acknowledged it (it polls)
        await gql(KEYS.admin, `mutation { restock(input: {sku: "HOST-1", quantity: 3}) { userErrors { code } } }`);
        await row.filter({ hasText: /^The Market\s*4\s*4\s*in sync$/ }).waitFor({ timeout: 15_000 });
        expect(m.listed('HOST-1')).toBe(4);
      } finally {
        await browser.close();
      }
    },
  );
});
