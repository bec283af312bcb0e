// The production profile (issue 9, item 1 and the /metrics and HOST parts of item 7): a production start refuses
// settings that would take fake money, trust the published development secret or leave an entry point open; exit code
// 2, naming the variable, never quoting a secret. Through the real entries (node/start.ts, node/sandbox-cli.ts).
import { afterAll, describe, expect, it } from 'vitest';
import { runScript, spawnServer, type ServerProcess } from '../kit/server.js';
import { DEV_WEBHOOK_SECRET } from '../node/config.js';
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
  HOST: '127.0.0.1',
  LOG_LEVEL: 'warn',
  PORT: '0',
};

/** Runs node/start.ts to its end with `env` (it must refuse: a start that succeeds would run until the timeout). */
function refusal(env: Record<string, string | undefined>) {
  const merged = Object.fromEntries(Object.entries({ ...PRODUCTION, ...env }).filter((e): e is [string, string] => e[1] !== undefined));
  // an unset variable must not come from this process's environment either
  const unset = Object.entries(env).filter(([, v]) => v === undefined).map(([k]) => k);
  const r = runScript('node/start.ts', { ...merged, ...Object.fromEntries(unset.map((k) => [k, ''])) }, 30_000);
  return { status: r.status, output: `${r.stdout}${r.stderr}` };
}

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
    const stripe = refusal({ PAYMENT_PROVIDER: 'stripe', STRIPE_SECRET_KEY: 'sk_test_prod_profile_secret_key', STRIPE_WEBHOOK_SECRET: DEV_WEBHOOK_SECRET });
    expect(stripe.status).toBe(2);
    expect(stripe.output).toMatch(/STRIPE_WEBHOOK_SECRET: is the published development secret/);
    for (const r of [sandbox, stripe]) {
      expect(r.output).not.toContain(DEV_WEBHOOK_SECRET);
      expect(r.output).not.toContain('sk_test_prod_profile_secret_key');
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
      const r = runScript('node/sandbox-cli.ts', { NODE_ENV: 'production', PAYMENT_WEBHOOK_SECRET: secret, SANDBOX_PORT: '0' }, 30_000);
      expect(r.status).toBe(2);
      expect(`${r.stdout}${r.stderr}`).toMatch(/PAYMENT_WEBHOOK_SECRET: (required with|is the published development secret)/);
      expect(`${r.stdout}${r.stderr}`).not.toContain(DEV_WEBHOOK_SECRET);
    }
  });
});

async function webhook(srv: ServerProcess, secret: string) {
  const body = JSON.stringify({ id: 'evt_forged_1', type: 'payment.succeeded', orderId: '00000000-0000-0000-0000-000000000000', providerRef: 'pay_forged' });
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
    expect((await fetch(`${srv.url}/metrics`, { headers: { authorization: 'Bearer wrong_token_prod_profile_12' } })).status).toBe(401);
    const ok = await fetch(`${srv.url}/metrics`, { headers: { authorization: `Bearer ${token}` } });
    expect(ok.status).toBe(200);
    expect(await ok.text()).toMatch(/# HELP/);
  });
});

describe('HOST chooses the listen address', () => {
  const reachable = (port: number, host: string) =>
    fetch(`http://${host}:${port}/healthz`).then(
      (r) => r.status,
      () => 'refused',
    );

  it('listens on 127.0.0.1 only by default in development; HOST=0.0.0.0 listens on every address', async () => {
    const dev = await spawnServer({ env: { NODE_ENV: 'development', DATABASE_URL: tdb.url, API_KEYS: PRODUCTION.API_KEYS, HOST: '' } });
    servers.push(dev);
    // 127.0.0.2 is this machine too (all of 127/8 is loopback), but not the address the server bound
    expect(await reachable(dev.port, '127.0.0.1')).toBe(200);
    expect(await reachable(dev.port, '127.0.0.2')).toBe('refused');
    const all = await spawnServer({ env: { NODE_ENV: 'development', DATABASE_URL: tdb.url, API_KEYS: PRODUCTION.API_KEYS, HOST: '0.0.0.0' } });
    servers.push(all);
    expect(await reachable(all.port, '127.0.0.2')).toBe(200);
  });
});
