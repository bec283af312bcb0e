// GraphiQL on the Node host works with no network beyond the host: every request that leaves 127.0.0.1 is aborted,
// and the editor still renders and runs a query with the key sent from its headers tab.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser } from 'playwright-core';
import { createTestDatabase, type TestDatabase } from './support/db.js';
import { spawnServer, type ServerProcess } from '../kit/server.js';
import { KEYS, CREATE_PRODUCT } from './support/app.js';
import { chromiumAvailable, launchChromium } from './support/browser.js';

const hasChromium = chromiumAvailable();
const API_KEYS = `storefront:${KEYS.storefront},admin:${KEYS.admin}`;

describe.skipIf(!hasChromium)('GraphiQL, offline, in headless Chromium', () => {
  let tdb: TestDatabase;
  let host: ServerProcess;
  let browser: Browser;
  beforeAll(async () => {
    tdb = await createTestDatabase({ max: 2 });
    host = await spawnServer({ env: { DATABASE_URL: tdb.url, API_KEYS } });
    const res = await fetch(host.endpoint, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${KEYS.admin}` },
      body: JSON.stringify({
        query: CREATE_PRODUCT,
        variables: {
          input: { sku: 'GQL-1', name: 'Offline lamp', priceAmount: 900, currencyCode: 'USD', initialStock: 3 },
        },
      }),
    });
    expect(((await res.json()) as any).data.createProduct.userErrors).toEqual([]);
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await host?.stop();
    await tdb?.drop();
  });

  it('renders the editor and runs a query with an Authorization header while every request off 127.0.0.1 is aborted', async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    const outside: string[] = [];
    await context.route('**/*', (route) => {
      const url = new URL(route.request().url());
      if (url.hostname === '127.0.0.1' || url.protocol === 'data:' || url.protocol === 'blob:') return route.continue();
      outside.push(url.href);
      return route.abort('internetdisconnected');
    });
    const page = await context.newPage();
    const problems: string[] = [];
    page.on('pageerror', (err) => problems.push(`page error: ${err.message}`));
    page.on('console', (m) => m.type() === 'error' && !/401/.test(m.text()) && problems.push(`console: ${m.text()}`));
    const sent: { authorization?: string; body: string }[] = [];
    page.on(
      'request',
      (r) =>
        r.method() === 'POST' &&
        r.url().endsWith('/graphql') &&
        sent.push({ authorization: r.headers().authorization, body: r.postData() ?? '' }),
    );

    const query = '{ product(sku: "GQL-1") { name availability { available } } }';
    const res = await page.goto(`${host.endpoint}?query=${encodeURIComponent(query)}`);
    expect(res!.status()).toBe(200);
    expect(await res!.text()).not.toMatch(/https?:\/\/(?!127\.0\.0\.1)[^"' ]*\.(js|css)/); // no asset from elsewhere
    await page.locator('.graphiql-container').first().waitFor();
    await page.locator('.graphiql-query-editor .monaco-editor').first().waitFor();

    // the key goes in the headers tab, as the README says
    await page.locator('.graphiql-editor-tools button[data-name="headers"]').click();
    await page.locator('.graphiql-editor-tool .monaco-editor:visible').click();
    await page.keyboard.insertText(JSON.stringify({ Authorization: `Bearer ${KEYS.storefront}` }));
    await page.locator('.graphiql-execute-button').click();
    await page.locator('.result-window').filter({ hasText: 'Offline lamp' }).waitFor();
    expect(await page.locator('.result-window').textContent()).toMatch(/"available":\s*3/);

    const ran = sent.find((s) => s.body.includes('GQL-1'));
    expect(ran?.authorization).toBe(`Bearer ${KEYS.storefront}`);
    expect(outside).toEqual([]);
    expect(problems).toEqual([]);
    await context.close();
  });

  it('serves its assets from the host, cacheable, under a CSP that allows scripts from this origin only', async () => {
    const html = await (await fetch(host.endpoint, { headers: { accept: 'text/html' } })).text();
    expect(html).toContain(`script-src 'self';`);
    const assets = [...html.matchAll(/(?:src|href)="(\/graphiql\/[^"]+)"/g)].map((m) => m[1]!);
    expect(assets.map((a) => a.split('/').pop()).sort()).toEqual([
      'favicon.ico',
      'graphiql.css',
      'start.js',
      'yoga-graphiql.js',
    ]);
    for (const a of assets) {
      const r = await fetch(`${host.url}${a}`);
      expect(r.status, a).toBe(200);
      expect(r.headers.get('cache-control'), a).toContain('immutable');
      expect((await r.arrayBuffer()).byteLength, a).toBeGreaterThan(100);
    }
  });
});
