// WEB_CONCURRENCY (issue 23, node/config.ts): how many host processes `npm start` forks, its default per profile, and
// the settings it cannot run with (each refusal names WEB_CONCURRENCY).
import { availableParallelism } from 'node:os';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../node/config.js';

const URL = 'postgres://u@db.example/x';
const PRODUCTION = {
  NODE_ENV: 'production',
  DATABASE_URL: URL,
  PAYMENT_PROVIDER: 'sandbox',
  ALLOW_SANDBOX_PAYMENTS: 'true',
  PAYMENT_WEBHOOK_SECRET: 'whsec_a_secret_of_this_shop_only',
  BUYER_TOKEN_SECRET: 'a-buyer-token-secret-of-32-characters-or-more',
  HOST: '127.0.0.1',
};
const refusal = (env: Record<string, string>) => {
  try {
    loadConfig(env);
    return '';
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    return err.message;
  }
};

describe('WEB_CONCURRENCY', () => {
  it('is 1 in development and without Redis in production, one per core in production with DATABASE_URL and REDIS_URL', () => {
    expect(loadConfig({}).http.processes).toBe(1);
    expect(loadConfig({ DATABASE_URL: URL }).http.processes).toBe(1);
    expect(loadConfig(PRODUCTION).http.processes).toBe(1);
    expect(loadConfig({ ...PRODUCTION, REDIS_URL: 'redis://127.0.0.1:6379' }).http.processes).toBe(
      availableParallelism(),
    );
    expect(loadConfig({ DATABASE_URL: URL, WEB_CONCURRENCY: '3', MARKETPLACE_SANDBOX: 'off' }).http.processes).toBe(3);
  });

  it('refuses more than 1 on the embedded database, with the in-process marketplace sandbox, and in production without Redis', () => {
    expect(refusal({ WEB_CONCURRENCY: '2' })).toMatch(/WEB_CONCURRENCY.*without DATABASE_URL/);
    expect(refusal({ DATABASE_URL: URL, WEB_CONCURRENCY: '2', MARKETPLACE_SANDBOX: 'in-process' })).toMatch(
      /WEB_CONCURRENCY.*MARKETPLACE_SANDBOX/,
    );
    expect(refusal({ ...PRODUCTION, WEB_CONCURRENCY: '2' })).toMatch(/WEB_CONCURRENCY.*REDIS_URL/);
    expect(refusal({ ...PRODUCTION, WEB_CONCURRENCY: '2', REDIS_URL: 'redis://127.0.0.1:6379' })).toBe('');
    expect(refusal({ DATABASE_URL: URL, WEB_CONCURRENCY: '0' })).toMatch(/WEB_CONCURRENCY/);
  });
});

describe('CLAIM_LANES_PER_SKU', () => {
  it("is the host's cores over its processes when absent, halved with PostgreSQL on this machine, at least 1, and as given otherwise", () => {
    const cores = availableParallelism();
    expect(loadConfig({ DATABASE_URL: URL }).orders.claimLanesPerSku).toBe(cores);
    expect(
      loadConfig({ DATABASE_URL: URL, WEB_CONCURRENCY: '3', MARKETPLACE_SANDBOX: 'off' }).orders.claimLanesPerSku,
    ).toBe(Math.max(1, Math.floor(cores / 3)));
    // the embedded database, or a URL on this machine: its backends need the same cores as the lanes' batches
    for (const env of [
      {},
      { DATABASE_URL: 'postgres://u@127.0.0.1:5432/x' },
      { DATABASE_URL: 'postgres://u@localhost/x' },
      { DATABASE_URL: 'postgres://u@[::1]/x' },
      { DATABASE_URL: 'postgresql:///x?host=/var/run/postgresql' },
    ])
      expect(loadConfig(env).orders.claimLanesPerSku, JSON.stringify(env)).toBe(Math.max(1, Math.floor(cores / 2)));
    // the host a ?host= names is the one pg connects to
    expect(loadConfig({ DATABASE_URL: 'postgresql:///x?host=db.example' }).orders.claimLanesPerSku).toBe(cores);
    expect(loadConfig({ CLAIM_LANES_PER_SKU: '6' }).orders.claimLanesPerSku).toBe(6);
    expect(refusal({ CLAIM_LANES_PER_SKU: '0' })).toMatch(/CLAIM_LANES_PER_SKU.*must be an integer >= 1/);
  });
});
