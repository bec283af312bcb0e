// `npm run sale:demo` as docs/console.md tells a person to run it: `npm start` (embedded PostgreSQL, demo keys), the
// console open in Chromium and signed in with the admin demo key, then the script in another process; the console's
// stock row of the sale's SKU moves through the sale (held up, then sold up and held down) and ends at the figures the
// script printed, which are the database's.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Browser } from 'playwright-core';
import { spawnServer, type ServerProcess } from '../kit/server.js';
import { ROOT } from '../kit/root.js';
import { chromiumAvailable, launchChromium } from './support/browser.js';

const hasChromium = chromiumAvailable();
const SKU = 'DEMO-FLASH';

/** `npm run -s sale:demo` from the repository root, pointed at `url` and the server's data folder (its demo keys). */
function saleDemo(env: Record<string, string>): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    const child = execFile(
      'npm',
      ['run', '-s', 'sale:demo'],
      {
        cwd: ROOT,
        env: { ...process.env, LASTUNIT_ADMIN_KEY: '', LASTUNIT_STOREFRONT_KEY: '', ...env },
        timeout: 90_000,
      },
      (_err, stdout, stderr) => resolve({ code: child.exitCode, out: `${stdout}${stderr}` }),
    );
  });
}

describe.skipIf(!hasChromium)('npm run sale:demo, watched on the console', () => {
  let dataDir: string;
  let server: ServerProcess;
  let browser: Browser;
  beforeAll(async () => {
    dataDir = mkdtempSync(path.join(os.tmpdir(), 'lastunit-sale-demo-'));
    server = await spawnServer({
      env: { DATA_DIR: dataDir, DATABASE_URL: '', API_KEYS: '', NODE_ENV: 'development', RELAY_POLL_MS: '200' },
    });
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await server?.stop('SIGTERM', 20_000);
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('refuses a server that is not on this machine, before it sends anything', async () => {
    const r = await saleDemo({ LASTUNIT_URL: 'http://192.0.2.1:4000', DATA_DIR: dataDir });
    expect(r.code).toBe(1);
    expect(r.out).toContain('this machine only (127.0.0.1), not 192.0.2.1');
  });

  it('runs a flash sale the console shows moving: held, then sold, released units back on sale', async () => {
    const keys = JSON.parse(readFileSync(path.join(dataDir, 'demo-keys.json'), 'utf8')) as {
      role: string;
      key: string;
    }[];
    const page = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
    await page.goto(`${server.url}/console`);
    await page.fill('#admin-key', keys.find((k) => k.role === 'admin')!.key);
    await page.click('button[type=submit]');
    await page.locator('#live').filter({ hasText: 'Live' }).waitFor({ timeout: 15_000 });

    // what the page shows for the SKU, sampled while the script runs (the table finds a new SKU within 5 s)
    const seen: string[] = [];
    let running = true;
    const watch = (async () => {
      while (running) {
        const row = await page.evaluate((sku) => {
          const cell = (col: string) => document.querySelector(`#stock-${sku} td[data-col=${col}]`)?.textContent;
          return cell('held') == null
            ? null
            : `held ${cell('held')} sold ${cell('sold')} available ${cell('available')}`;
        }, SKU);
        if (row && row !== seen.at(-1)) seen.push(row);
        await new Promise((r) => setTimeout(r, 100));
      }
    })();
    const r = await saleDemo({
      LASTUNIT_URL: server.url,
      DATA_DIR: dataDir,
      SALE_SKU: SKU,
      SALE_UNITS: '10',
      SALE_BUYERS: '30',
      SALE_PAY: '5',
      SALE_RELEASE: '2',
      SALE_STEP_MS: '6000',
    });
    expect(r.code, r.out).toBe(0);
    expect(r.out).toContain(`created ${SKU} with 10 units; 30 buyers arrive`);
    expect(r.out).toMatch(/30 buyers at once: 10 holds, 20 refused \(SOLD_OUT 20\)/);
    expect(r.out).toContain('paid 5 of the holds');
    expect(r.out).toContain('released 2 holds');
    expect(r.out).toContain('left 3 held');
    expect(r.out).toContain(`${SKU} at the end: available 2, held 3, awaiting payment 0, sold 5`);
    await expect.poll(() => seen.at(-1), { timeout: 15_000 }).toBe('held 3 sold 5 available 2');
    running = false;
    await watch;
    // the page went through the sale's shape, not only its end: all ten held and none sold, then five sold
    expect(seen).toContain('held 10 sold 0 available 0');
    expect(seen.indexOf('held 10 sold 0 available 0')).toBeLessThan(seen.indexOf('held 3 sold 5 available 2'));
    expect(seen.some((s) => /^held 5 sold 5 /.test(s))).toBe(true);
  });
});
