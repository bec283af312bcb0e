// The production profile: a production start refuses settings that would take fake money, trust the published
// development secret, run on the embedded database with demo keys or leave an entry point open; exit code 2, every
// problem in one start, each naming its variable, never quoting a secret. Through the real entries (node/start.ts,
// node/sandbox-cli.ts).
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ROOT } from '../kit/root.js';
import { runScript, spawnServer, type ServerProcess } from '../kit/server.js';
import { DEV_BUYER_TOKEN_SECRET, DEV_WEBHOOK_SECRET } from '../node/config.js';
import { SIGNATURE_HEADER, signPayload } from '../payments/webhook-signature.js';
import { createTestDatabase } from './support/db.js';

const tdb = await createTestDatabase();
const servers: ServerProcess[] = [];
afterAll(async () => {
  for (const s of servers) await s.stop();
  await tdb.drop();
});

const LONG = { shop: 'prod_profile_storefront_key_1', admin: 'prod_profile_admin_key_123456' };
const SECRET = 'whsec_prod_profile_own_secret_9f8e7d';
/** A production environment that starts; each case below breaks one thing. */
const PRODUCTION = {
  NODE_ENV: 'production',
  DATABASE_URL: tdb.url,
  API_KEYS: `storefront:shop:${LONG.shop},admin:ops:${LONG.admin}`,
  PAYMENT_PROVIDER: 'sandbox',
  ALLOW_SANDBOX_PAYMENTS: 'true',
  PAYMENT_WEBHOOK_SECRET: SECRET,
  BUYER_TOKEN_SECRET: 'bts_prod_profile_own_secret_0123456789',
  HOST: '127.0.0.1',
  LOG_LEVEL: 'warn',
  PORT: '0',
};

/** Runs node/start.ts to its end with `env` (it must refuse: a start that succeeds would run until the timeout). */
function refusal(env: Record<string, string | undefined>) {
  const merged = Object.fromEntries(
    Object.entries({ ...PRODUCTION, ...env }).filter((e): e is [string, string] => e[1] !== undefined),
  );
  // an unset variable must not come from this process's environment either
  const unset = Object.entries(env)
    .filter(([, v]) => v === undefined)
    .map(([k]) => k);
  const r = runScript('node/start.ts', { ...merged, ...Object.fromEntries(unset.map((k) => [k, ''])) }, 30_000);
  return { status: r.status, output: `${r.stdout}${r.stderr}` };
}

/** `npm start`'s entry with exactly `env` (PATH and HOME aside): nothing else of this process's environment leaks in. */
function startWithOnly(env: Record<string, string>) {
  const r = spawnSync(process.execPath, ['--import', 'tsx', 'node/start.ts'], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env },
    encoding: 'utf8',
    timeout: 30_000,
  });
  return { status: r.status, output: `${r.stdout}${r.stderr}` };
}

/** The problem lines of a refused start, each `  VARIABLE: message`, by variable. */
const problemsOf = (output: string) => [...output.matchAll(/^ {2}([A-Z_]+): (.*)$/gm)].map((m) => m[1]);

describe('a production start lists every problem at once (exit 2, one line per problem, each naming its variable)', () => {
  it('names every missing variable in one start when nothing is set, DATABASE_URL among them', () => {
    const r = startWithOnly({ NODE_ENV: 'production' });
    expect(r.status).toBe(2);
    expect(r.output).toMatch(
      /DATABASE_URL: required with NODE_ENV=production: the embedded database and its demo keys are for development/,
    );
    expect(r.output).toMatch(/API_KEYS: required with NODE_ENV=production/);
    expect(r.output).toMatch(/PAYMENT_PROVIDER: required with NODE_ENV=production/);
    expect(r.output).toMatch(/METRICS_TOKEN: required with NODE_ENV=production when HOST is not loopback/);
    expect(r.output).toMatch(/BUYER_TOKEN_SECRET: required with NODE_ENV=production/);
    expect(problemsOf(r.output).sort()).toEqual([
      'API_KEYS',
      'BUYER_TOKEN_SECRET',
      'DATABASE_URL',
      'METRICS_TOKEN',
      'PAYMENT_PROVIDER',
    ]);
  });

  it('names each refused variable in the same start, a malformed value beside the rules it would have met', () => {
    const short = 'short_key_20_chars_x';
    const r = refusal({
      PORT: 'eighty',
      ALLOW_SANDBOX_PAYMENTS: undefined,
      PAYMENT_WEBHOOK_SECRET: DEV_WEBHOOK_SECRET,
      API_KEYS: `storefront:shop:${LONG.shop},admin:ops:${short}`,
      HOST: '0.0.0.0',
      MARKETPLACE_SANDBOX: 'in-process',
      LASTUNIT_TEST_DIAGNOSTICS: 'on',
      HOLD_TTL_SECONDS: '0',
    });
    expect(r.status).toBe(2);
    const expected: Record<string, RegExp> = {
      PORT: /PORT: must be an integer >= 0/,
      HOLD_TTL_SECONDS: /HOLD_TTL_SECONDS: must be an integer >= 1/,
      PAYMENT_PROVIDER: /PAYMENT_PROVIDER: sandbox takes no money/,
      PAYMENT_WEBHOOK_SECRET: /PAYMENT_WEBHOOK_SECRET: is the published development secret/,
      API_KEYS: /API_KEYS: entry 2 of 2 is shorter than 24 characters/,
      METRICS_TOKEN: /METRICS_TOKEN: required with NODE_ENV=production when HOST is not loopback/,
      MARKETPLACE_SANDBOX: /MARKETPLACE_SANDBOX: in-process is a fake marketplace/,
      LASTUNIT_TEST_DIAGNOSTICS: /LASTUNIT_TEST_DIAGNOSTICS: test-only/,
    };
    for (const pattern of Object.values(expected)) expect(r.output).toMatch(pattern);
    expect(problemsOf(r.output).sort()).toEqual(Object.keys(expected).sort());
    for (const secret of [DEV_WEBHOOK_SECRET, short, LONG.shop, LONG.admin, SECRET])
      expect(r.output).not.toContain(secret);
  });

  it('refuses a production start with no DATABASE_URL even when everything else is set', () => {
    const r = refusal({ DATABASE_URL: undefined });
    expect(r.status).toBe(2);
    expect(problemsOf(r.output)).toEqual(['DATABASE_URL']);
  });
});

describe('a production start refuses unsafe settings (exit 2, naming the variable)', () => {
  it('refuses a start without PAYMENT_PROVIDER (the sandbox would confirm orders with no money)', () => {
    const r = refusal({ PAYMENT_PROVIDER: undefined });
    expect(r.status).toBe(2);
    expect(r.output).toMatch(/PAYMENT_PROVIDER: required with NODE_ENV=production/);
  });

  it('refuses the sandbox unless ALLOW_SANDBOX_PAYMENTS=true', () => {
    for (const allow of [undefined, 'false']) {
      const r = refusal({ ALLOW_SANDBOX_PAYMENTS: allow });
      expect(r.status).toBe(2);
      expect(r.output).toMatch(/PAYMENT_PROVIDER: sandbox takes no money/);
    }
  });

  it('refuses a missing webhook secret instead of falling back to the development one', () => {
    const r = refusal({ PAYMENT_WEBHOOK_SECRET: undefined });
    expect(r.status).toBe(2);
    expect(r.output).toMatch(/PAYMENT_WEBHOOK_SECRET: required with NODE_ENV=production/);
  });

  it('refuses the published development secret for either processor, without printing it', () => {
    const sandbox = refusal({ PAYMENT_WEBHOOK_SECRET: DEV_WEBHOOK_SECRET });
    expect(sandbox.status).toBe(2);
    expect(sandbox.output).toMatch(/PAYMENT_WEBHOOK_SECRET: is the published development secret/);
    const stripe = refusal({
      PAYMENT_PROVIDER: 'stripe',
      STRIPE_SECRET_KEY: 'sk_test_prod_profile_secret_key',
      STRIPE_WEBHOOK_SECRET: DEV_WEBHOOK_SECRET,
    });
    expect(stripe.status).toBe(2);
    expect(stripe.output).toMatch(/STRIPE_WEBHOOK_SECRET: is the published development secret/);
    for (const r of [sandbox, stripe]) {
      expect(r.output).not.toContain(DEV_WEBHOOK_SECRET);
      expect(r.output).not.toContain('sk_test_prod_profile_secret_key');
    }
  });

  it('refuses a missing, short or published BUYER_TOKEN_SECRET (buyer tokens would be forgeable), without printing it', () => {
    for (const [secret, why] of [
      [undefined, /BUYER_TOKEN_SECRET: required with NODE_ENV=production/],
      ['bts_too_short', /BUYER_TOKEN_SECRET: must have 32\+ characters/],
      [DEV_BUYER_TOKEN_SECRET, /BUYER_TOKEN_SECRET: is the published development secret/],
    ] as const) {
      const r = refusal({ BUYER_TOKEN_SECRET: secret });
      expect(r.status).toBe(2);
      expect(r.output).toMatch(why);
      if (secret) expect(r.output).not.toContain(secret);
    }
  });

  it('refuses an API key shorter than 24 characters, naming its position, never the key', () => {
    const short = 'short_key_20_chars_x';
    const r = refusal({ API_KEYS: `storefront:shop:${LONG.shop},admin:ops:${short}` });
    expect(r.status).toBe(2);
    expect(r.output).toMatch(/API_KEYS: entry 2 of 2 is shorter than 24 characters/);
    expect(r.output).not.toContain(short);
    expect(r.output).not.toContain(LONG.shop);
  });

  it('refuses an open /metrics on a non-loopback address without METRICS_TOKEN', () => {
    for (const host of [undefined, '0.0.0.0']) {
      const r = refusal({ HOST: host });
      expect(r.status).toBe(2);
      expect(r.output).toMatch(/METRICS_TOKEN: required with NODE_ENV=production when HOST is not loopback/);
    }
  });

  it('the standalone sandbox refuses the development secret in production', () => {
    for (const secret of ['', DEV_WEBHOOK_SECRET]) {
      const r = runScript(
        'node/sandbox-cli.ts',
        { NODE_ENV: 'production', PAYMENT_WEBHOOK_SECRET: secret, SANDBOX_PORT: '0' },
        30_000,
      );
      expect(r.status).toBe(2);
      expect(`${r.stdout}${r.stderr}`).toMatch(
        /PAYMENT_WEBHOOK_SECRET: (required with|is the published development secret)/,
      );
      expect(`${r.stdout}${r.stderr}`).not.toContain(DEV_WEBHOOK_SECRET);
    }
  });
});

async function webhook(srv: ServerProcess, secret: string) {
  const body = JSON.stringify({
    id: 'evt_forged_1',
    type: 'payment.succeeded',
    orderId: '00000000-0000-0000-0000-000000000000',
    providerRef: 'pay_forged',
  });
  return fetch(`${srv.url}/webhooks/payments/sandbox`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', [SIGNATURE_HEADER]: signPayload(body, secret) },
    body,
  });
}

describe('a production server that starts', () => {
  it('starts with explicit sandbox payments and a secret of its own; a webhook signed with the development secret is refused', async () => {
    const srv = await spawnServer({ env: PRODUCTION });
    servers.push(srv);
    const forged = await webhook(srv, DEV_WEBHOOK_SECRET);
    expect(forged.status).toBe(400);
    expect(JSON.stringify(await forged.json())).toMatch(/signature/i);
  });

  it('/metrics needs METRICS_TOKEN when it is set (and then may listen on every address)', async () => {
    const token = 'metrics_token_prod_profile_1234';
    const srv = await spawnServer({ env: { ...PRODUCTION, HOST: '0.0.0.0', METRICS_TOKEN: token } });
    servers.push(srv);
    expect((await fetch(`${srv.url}/metrics`)).status).toBe(401);
    expect(
      (await fetch(`${srv.url}/metrics`, { headers: { authorization: 'Bearer wrong_token_prod_profile_12' } })).status,
    ).toBe(401);
    const ok = await fetch(`${srv.url}/metrics`, { headers: { authorization: `Bearer ${token}` } });
    expect(ok.status).toBe(200);
    expect(await ok.text()).toMatch(/# HELP/);
  });
});

describe('a production demo box (EMBEDDED_DATABASE=allow)', () => {
  it('starts on the embedded database and never prints a whole key, in its log or in its page', async () => {
    const dataDir = mkdtempSync(path.join(os.tmpdir(), 'lastunit-demo-box-'));
    chmodSync(dataDir, 0o755);
    try {
      const srv = await spawnServer({
        env: { ...PRODUCTION, DATABASE_URL: '', API_KEYS: '', EMBEDDED_DATABASE: 'allow', DATA_DIR: dataDir },
      });
      try {
        expect((await fetch(`${srv.url}/healthz`)).status).toBe(200);
        const keys = JSON.parse(readFileSync(path.join(dataDir, 'demo-keys.json'), 'utf8')) as {
          role: string;
          key: string;
        }[];
        expect(keys.map((k) => k.role).sort()).toEqual(['admin', 'partner', 'public', 'storefront']);
        // the keys work (the demo box serves them) but are shown by their last characters only
        const shop = keys.find((k) => k.role === 'storefront')!.key;
        const q = await fetch(srv.endpoint, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${shop}` },
          body: JSON.stringify({ query: '{ products(skus: ["LAST-1"]) { sku } }' }),
        });
        expect((await q.json()).data.products).toEqual([{ sku: 'LAST-1' }]);
        const page = await (await fetch(`${srv.url}/`)).text();
        for (const k of keys) expect(page).not.toContain(k.key);
        for (const k of keys) {
          expect(srv.output()).not.toContain(k.key);
          expect(srv.output()).toContain(`...${k.key.slice(-4)}`);
        }
      } finally {
        expect(await srv.stop('SIGTERM', 20_000)).toBe(0);
      }
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});

describe('the start banner', () => {
  it('names the address the server bound: every address in production, this machine only by default elsewhere', async () => {
    const all = await spawnServer({
      env: { ...PRODUCTION, HOST: '', METRICS_TOKEN: 'metrics_token_banner_test_12345' },
    });
    servers.push(all);
    expect(all.output()).toContain(
      `lastunit listening on 0.0.0.0:${all.port} (every address): http://127.0.0.1:${all.port}/graphql`,
    );
    const dev = await spawnServer({
      env: { NODE_ENV: 'development', DATABASE_URL: tdb.url, API_KEYS: PRODUCTION.API_KEYS, HOST: '' },
    });
    servers.push(dev);
    expect(dev.output()).toContain(
      `lastunit listening on 127.0.0.1:${dev.port} (this machine only): http://127.0.0.1:${dev.port}/graphql`,
    );
  });
});

describe('HOST chooses the listen address', () => {
  const reachable = (port: number, host: string) =>
    fetch(`http://${host}:${port}/healthz`).then(
      (r) => r.status,
      () => 'refused',
    );

  it('listens on 127.0.0.1 only by default in development; HOST=0.0.0.0 listens on every address', async () => {
    const dev = await spawnServer({
      env: { NODE_ENV: 'development', DATABASE_URL: tdb.url, API_KEYS: PRODUCTION.API_KEYS, HOST: '' },
    });
    servers.push(dev);
    // 127.0.0.2 is this machine too (all of 127/8 is loopback), but not the address the server bound
    expect(await reachable(dev.port, '127.0.0.1')).toBe(200);
    expect(await reachable(dev.port, '127.0.0.2')).toBe('refused');
    const all = await spawnServer({
      env: { NODE_ENV: 'development', DATABASE_URL: tdb.url, API_KEYS: PRODUCTION.API_KEYS, HOST: '0.0.0.0' },
    });
    servers.push(all);
    expect(await reachable(all.port, '127.0.0.2')).toBe(200);
  });
});
