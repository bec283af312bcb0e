import { afterAll, describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnServer } from '../kit/server.js';
import { sessionScript } from './support/session.js';

// The README's worked session, run as written against `npm start`'s host: embedded PostgreSQL, demo catalog, demo keys.
const readme = readFileSync('README.md', 'utf8');
const block = /<!-- readme-session[^>]*-->\s*```sh\n([\s\S]*?)```/.exec(readme)?.[1];
const dataDir = mkdtempSync(path.join(os.tmpdir(), 'lastunit-readme-'));
const server = await spawnServer({
  env: { DATA_DIR: dataDir, DATABASE_URL: '', API_KEYS: '', NODE_ENV: 'development' },
});
afterAll(async () => {
  expect(await server.stop('SIGTERM', 20_000)).toBe(0); // stops cleanly, embedded PostgreSQL included
  rmSync(dataDir, { recursive: true, force: true });
});

describe('the README', () => {
  it('has a worked session block', () => {
    expect(block).toBeTruthy();
    expect(block).toMatch(/createProduct/);
  });

  it('prints demo keys at start and serves the demo catalog, one product with a single unit', async () => {
    const keys = JSON.parse(readFileSync(path.join(dataDir, 'demo-keys.json'), 'utf8')) as {
      role: string;
      key: string;
    }[];
    for (const k of keys) expect(server.output()).toContain(k.key);
    const shop = keys.find((k) => k.role === 'storefront')!.key;
    const r = await fetch(`${server.url}/graphql`, {
      method: 'POST',
      headers: { authorization: `Bearer ${shop}`, 'content-type': 'application/json' },
      body: JSON.stringify({ query: '{ product(sku: "LAST-1") { availability { available } } }' }),
    });
    expect((await r.json()).data.product.availability.available).toBe(1);
  });

  it('runs the worked session as written and every step answers what the README says', () => {
    const script = sessionScript(block!, server.output(), dataDir); // the address from the start banner, as a reader takes it
    // one JSON answer per line: a newline after every curl
    const out = execFileSync(
      'bash',
      ['-euo', 'pipefail', '-c', `curl() { command curl --fail-with-body "$@"; echo; }\n${script}`],
      {
        encoding: 'utf8',
        timeout: 60_000,
      },
    );
    const answers = out
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l).data);
    expect(answers).toHaveLength(7);
    const [created, restocked, placed, retried, during, released, after] = answers;
    expect(created.createProduct).toEqual({
      product: { sku: 'CAP-RED', availability: { available: 0, soldOut: true } },
      userErrors: [],
    });
    expect(restocked.restock).toEqual({ availability: { available: 3, soldOut: false }, userErrors: [] });
    expect(placed.placeOrder).toMatchObject({
      replayed: false,
      order: { status: 'RESERVED', total: { amount: 5800, currencyCode: 'USD' }, reservation: { state: 'HELD' } },
      userErrors: [],
    });
    expect(retried.placeOrder).toEqual({
      replayed: true,
      order: { id: placed.placeOrder.order.id, status: 'RESERVED' },
      userErrors: [],
    });
    expect(during.product.availability).toEqual({ available: 1, soldOut: false });
    expect(released.releaseReservation).toEqual({
      order: { id: placed.placeOrder.order.id, status: 'CANCELLED', reservation: { state: 'RELEASED' } },
      userErrors: [],
    });
    expect(after.product.availability).toEqual({ available: 3, soldOut: false });
  });
});
