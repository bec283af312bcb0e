// Every partner example runs as a newcomer runs it: `npm start` (embedded PostgreSQL, demo catalog, demo keys whose
// partner key names an app), then `npm run example:<client>`, which publishes the app's documents and prints what the
// API answered for the demo product.
import { afterAll, describe, expect, it } from 'vitest';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnServer } from '../kit/server.js';
import { ROOT } from '../kit/root.js';
import { DEMO_CATALOG, DEMO_PARTNER_APP } from '../node/demo-catalog.js';

const dataDir = mkdtempSync(path.join(os.tmpdir(), 'lastunit-examples-'));
const server = await spawnServer({
  env: { DATA_DIR: dataDir, DATABASE_URL: '', API_KEYS: '', NODE_ENV: 'development' },
});
afterAll(async () => {
  await server.stop('SIGTERM', 20_000);
  rmSync(dataDir, { recursive: true, force: true });
});

const lamp = DEMO_CATALOG.find((p) => p.sku === 'LAMP-1')!;
const EXPECTED = {
  sku: 'LAMP-1',
  name: lamp.name,
  price: { amount: lamp.priceAmount, currencyCode: lamp.currency },
  availability: { available: lamp.initialStock, soldOut: false },
};
const withoutTypenames = (v: unknown): unknown =>
  Array.isArray(v)
    ? v.map(withoutTypenames)
    : v && typeof v === 'object'
      ? Object.fromEntries(
          Object.entries(v)
            .filter(([k]) => k !== '__typename')
            .map(([k, x]) => [k, withoutTypenames(x)]),
        )
      : v;

/** `npm run -s example:<client>` from the repository root, pointed at this server and its data folder. */
function runExample(client: string): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    const child = execFile(
      'npm',
      ['run', '-s', `example:${client}`],
      {
        cwd: ROOT,
        env: {
          ...process.env,
          LASTUNIT_URL: server.url,
          DATA_DIR: dataDir,
          LASTUNIT_PARTNER_KEY: '',
          LASTUNIT_ADMIN_KEY: '',
        },
        timeout: 60_000,
      },
      (_err, stdout, stderr) => resolve({ code: child.exitCode, out: `${stdout}${stderr}` }),
    );
  });
}

describe('the partner example scripts against npm start', () => {
  it('the demo partner key names an app, and LAMP-1 is in the demo catalog', async () => {
    const keys = JSON.parse(readFileSync(path.join(dataDir, 'demo-keys.json'), 'utf8')) as {
      role: string;
      client?: string;
    }[];
    expect(keys.find((k) => k.role === 'partner')?.client).toBe(DEMO_PARTNER_APP);
    expect(server.output()).toContain(`(app ${DEMO_PARTNER_APP})`);
  });

  // at once, as four partners would (each publishes its own version of the app)
  it.concurrent.for(['apollo', 'urql', 'codegen', 'fetch'])(
    'npm run example:%s publishes its own version and prints the product',
    async (client, { expect }) => {
      const first = await runExample(client);
      expect(first.code, first.out).toBe(0);
      expect(first.out).toContain(`${DEMO_PARTNER_APP}@${client}-1.0.0: published (1 documents)`);
      const answer = new RegExp(`^${client}: product\\(sku: "LAMP-1"\\) = (.*)$`, 'm').exec(first.out);
      expect(answer, first.out).not.toBeNull();
      expect(withoutTypenames(JSON.parse(answer![1]!))).toEqual(EXPECTED);
    },
  );

  it("runs again as a partner's CI would: the version is already published, the answer the same", async () => {
    const again = await runExample('fetch');
    expect(again.code, again.out).toBe(0);
    expect(again.out).toContain(`${DEMO_PARTNER_APP}@fetch-1.0.0: already published`);
    expect(again.out).toContain('fetch: product(sku: "LAMP-1") = {');
  });
});
