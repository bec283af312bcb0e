import { describe, expect, it } from 'vitest';
import { runScript } from '../kit/server.js';
import { readFileSync } from 'node:fs';
import { apiHostNeeds, loadConfig, loadSandboxConfig, ConfigError } from '../node/config.js';
import * as nodeSections from '../node/config-sections.js';
import * as sharedSections from '../common/config-sections.js';
import * as workerSections from '../edge/worker-config.js';
import { variablesOf, type Section } from '../common/config-reader.js';
import { z } from 'zod';

describe('configuration', () => {
  it('has the documented defaults', () => {
    expect(loadConfig({})).toMatchObject({
      http: { port: 4000, host: '127.0.0.1' },
      database: { url: undefined, embedded: 'allow', dataDir: '.data', poolSize: 20 },
      auth: { apiKeys: undefined },
      orders: { holdTtlSeconds: 600, idempotencyRetentionHours: 24, maxLineQuantity: 100, maxLines: 50 },
      sweeper: {
        intervalMs: 1000,
        retentionIntervalMs: 60_000,
        retention: { outboxHours: 24, processedEventsDays: 30 },
      },
      webhooks: { toleranceSeconds: 300, maxBodyBytes: 262_144 },
      payments: {
        provider: 'sandbox',
        sandboxUrl: undefined,
        timeoutMs: 5000,
        deadlineSeconds: 60,
        reconcileIntervalMs: 1000,
        faultPauseBeforeAuthorizeMs: 0,
      },
    });
    expect(loadConfig({}).payments.webhookSecret).toMatch(/dev/);
  });

  it('selects Stripe with its keys', () => {
    const c = loadConfig({
      PAYMENT_PROVIDER: 'stripe',
      STRIPE_SECRET_KEY: 'sk_test_x',
      STRIPE_WEBHOOK_SECRET: 'whsec_x',
    });
    expect(c.payments).toMatchObject({
      provider: 'stripe',
      stripeSecretKey: 'sk_test_x',
      stripeWebhookSecret: 'whsec_x',
    });
  });

  it('has live defaults: no Redis, relay on, short cache TTL', () => {
    expect(loadConfig({}).live).toMatchObject({
      redisUrl: undefined,
      redisKeyPrefix: 'lastunit:',
      cacheTtlSeconds: 5,
      relay: true,
      relayPollMs: 500,
      relayBatchSize: 200,
      relayLeaseMs: 5000,
    });
    expect(loadConfig({ REDIS_URL: 'redis://127.0.0.1:6379/2', RELAY: 'off' }).live).toMatchObject({
      redisUrl: 'redis://127.0.0.1:6379/2',
      relay: false,
    });
  });

  it('parses API_KEYS as comma-separated role:key', () => {
    expect(loadConfig({ API_KEYS: 'storefront:abcdefgh12, admin:zyxwvuts98' }).auth.apiKeys).toEqual([
      { role: 'storefront', key: 'abcdefgh12' },
      { role: 'admin', key: 'zyxwvuts98' },
    ]);
  });

  it('parses role:client:key, naming the client a rotated key keeps', () => {
    expect(
      loadConfig({
        API_KEYS: 'storefront:acme-shop:old_key_123,storefront:acme-shop:new_key_456,admin:ops:k:with:colons',
      }).auth.apiKeys,
    ).toEqual([
      { role: 'storefront', client: 'acme-shop', key: 'old_key_123' },
      { role: 'storefront', client: 'acme-shop', key: 'new_key_456' },
      { role: 'admin', client: 'ops', key: 'k:with:colons' },
    ]);
  });

  it('names a malformed API_KEYS entry by its position and never prints the key in it', () => {
    const secret = 'live_sk_9f8e7d6c5b4a';
    for (const bad of [`storefrnt:${secret}`, `storefront:Bad_Client:${secret}`, 'admin:short']) {
      let message = '';
      try {
        loadConfig({ API_KEYS: `admin:fine_admin_key_1,${bad}` });
      } catch (err) {
        message = (err as Error).message;
      }
      expect(message).toMatch(/API_KEYS: entry 2 of 2 is not role:client:key/);
      expect(message).not.toContain(secret);
      expect(message).not.toContain('short');
    }
  });

  it.each([
    ['PORT', 'eighty'],
    ['HOLD_TTL_SECONDS', '0'],
    ['SWEEP_INTERVAL_MS', '-5'],
    ['IDEMPOTENCY_RETENTION_HOURS', '1.5'],
    ['MAX_LINE_QUANTITY', 'lots'],
    ['MAX_LINES', '0'],
    ['DATABASE_URL', 'mysql://x'],
    ['API_KEYS', 'root:abcdefgh12'],
    ['API_KEYS', 'admin:short'],
    ['PAYMENT_PROVIDER', 'paypal'],
    ['PAYMENT_TIMEOUT_MS', '0'],
    ['PAYMENT_TIMEOUT_MS', '5s'],
    ['PAYMENT_DEADLINE_SECONDS', '-1'],
    ['SANDBOX_PAYMENTS_URL', 'ftp://sandbox'],
    ['WEBHOOK_TOLERANCE_SECONDS', '0'],
    ['RECONCILE_INTERVAL_MS', '1'],
    ['LASTUNIT_FAULT_PAUSE_BEFORE_AUTHORIZE_MS', 'later'],
    ['REDIS_URL', 'http://127.0.0.1:6379'],
    ['REDIS_KEY_PREFIX', 'has spaces'],
    ['CACHE_TTL_SECONDS', '0'],
    ['RELAY', 'maybe'],
    ['RELAY_POLL_MS', '5'],
    ['RELAY_BATCH_SIZE', 'many'],
    ['RELAY_LEASE_MS', '50'],
    ['EMBEDDED_DATABASE', 'maybe'],
  ])('refuses %s=%s with a message naming the variable', (name, value) => {
    expect(() => loadConfig({ [name]: value })).toThrow(ConfigError);
    expect(() => loadConfig({ [name]: value })).toThrow(new RegExp(name));
  });

  it.each([
    [
      { PAYMENT_PROVIDER: 'stripe' },
      /STRIPE_SECRET_KEY: required when PAYMENT_PROVIDER=stripe[\s\S]*STRIPE_WEBHOOK_SECRET/,
    ],
    [
      { SANDBOX_PAYMENTS_URL: 'http://127.0.0.1:4100' },
      /PAYMENT_WEBHOOK_SECRET: required when SANDBOX_PAYMENTS_URL is set/,
    ],
  ])('names the missing payment variable for %o', (env, message) => {
    expect(() => loadConfig(env)).toThrow(message);
  });

  it('validates the standalone sandbox settings', () => {
    expect(loadSandboxConfig({})).toMatchObject({ port: 4100, webhookUrl: undefined, hangMs: 10_000 });
    expect(() => loadSandboxConfig({ SANDBOX_PORT: 'x' })).toThrow(/SANDBOX_PORT/);
    expect(() => loadSandboxConfig({ SANDBOX_WEBHOOK_URL: 'nope' })).toThrow(/SANDBOX_WEBHOOK_URL/);
  });

  it('lists every bad variable at once', () => {
    expect(() => loadConfig({ PORT: 'x', MAX_LINES: 'y' })).toThrow(/PORT[\s\S]*MAX_LINES/);
  });

  it('stops `npm start` with exit code 2 and the variable named, before touching any database', () => {
    const r = runScript('node/start.ts', { HOLD_TTL_SECONDS: 'soon', DATABASE_URL: '' }, 30_000);
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/HOLD_TTL_SECONDS: must be an integer/);
  });

  it('with EMBEDDED_DATABASE=refuse needs DATABASE_URL and API_KEYS in development too, both named in one refusal', () => {
    expect(() => loadConfig({ NODE_ENV: 'development', EMBEDDED_DATABASE: 'refuse' }, apiHostNeeds)).toThrow(
      /DATABASE_URL: required with EMBEDDED_DATABASE=refuse[\s\S]*API_KEYS: required with EMBEDDED_DATABASE=refuse/,
    );
    expect(
      loadConfig(
        {
          NODE_ENV: 'development',
          EMBEDDED_DATABASE: 'refuse',
          DATABASE_URL: 'postgres://db/x',
          API_KEYS: 'admin:abcdefgh12',
        },
        apiHostNeeds,
      ).database,
    ).toMatchObject({
      url: 'postgres://db/x',
      embedded: 'refuse',
    });
  });

  it("lists an entry's own needs with every other problem: the relay worker without DATABASE_URL and a bad value", () => {
    const r = runScript('node/relay-cli.ts', { DATABASE_URL: '', RELAY_BATCH_SIZE: 'many' }, 30_000);
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/RELAY_BATCH_SIZE: must be an integer[\s\S]*DATABASE_URL: required by the relay worker/);
  });

  it('refuses DATABASE_URL without API_KEYS (demo keys are only for the embedded default)', () => {
    const r = runScript('node/start.ts', { DATABASE_URL: 'postgres://127.0.0.1:1/none', API_KEYS: '' }, 30_000);
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/API_KEYS: required when DATABASE_URL is set/);
  });

  it("has every variable the sections read in the README's configuration table", () => {
    const readme = readFileSync('README.md', 'utf8');
    const table = readme.slice(readme.indexOf('## Configuration'), readme.indexOf('### The production profile'));
    const named = new Set(
      [...table.matchAll(/^\| ([^|]+) \|/gm)].flatMap((m) => [...m[1]!.matchAll(/`([A-Z_]+)`/g)].map((v) => v[1]!)),
    );
    const runtime = loadConfig({}).runtime;
    const sections = [
      ...Object.values(nodeSections),
      ...Object.values(sharedSections),
      ...Object.values(workerSections),
    ]
      // a section that depends on the profile is a function of the runtime section; other exports are not sections
      .map((s) =>
        typeof s === 'function' && /^\w+Settings$/.test(s.name) ? (s as (r: typeof runtime) => unknown)(runtime) : s,
      )
      .filter((s): s is Section => s instanceof z.ZodObject || s instanceof z.ZodPipe);
    const variables = new Set(sections.flatMap(variablesOf));
    expect(variables.size).toBeGreaterThan(60);
    expect([...variables].filter((v) => !named.has(v))).toEqual([]);
  });
});
