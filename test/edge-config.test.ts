import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../node/config.js';
import { loadWorkerConfig } from '../edge/worker-config.js';
import { DEFAULT_ROLE_LIMITS } from '../node/config-sections.js';

const WORKER = {
  DATABASE_URL: 'postgres://u:p@db.example/neondb',
  API_KEYS: 'storefront:abcdefgh12_storefront_key,partner:partner1234_partner_key_x',
};

describe('limit, rate limit and edge configuration', () => {
  it('has the documented defaults on the Node host', () => {
    expect(loadConfig({})).toMatchObject({
      limits: { maxBodyBytes: 65_536, maxDepth: 8, maxAliases: 15, maxTokens: 1_000, maxCost: 1_000 },
      rateLimits: { limit: DEFAULT_ROLE_LIMITS, windowSeconds: 60, buyerLimit: 30 },
      http: { trustProxy: 0, testDiagnostics: false },
      orders: { maxActiveHolds: 5, claimBatching: true, claimBatchesInFlight: 1 },
      live: {
        redisUrl: undefined,
        sockets: { maxSubscriptionsPerSocket: 100, maxSocketsPerClient: 100, maxSocketsPerIp: 32 },
      },
    });
    expect(DEFAULT_ROLE_LIMITS).toEqual({ public: 300_000, storefront: 300_000, partner: 60_000, admin: 6_000 });
    // one number for every role, 0 for none
    expect(loadConfig({ RATE_LIMIT_PER_WINDOW: '1200' }).rateLimits.limit).toBe(1200);
    expect(loadConfig({ RATE_LIMIT_PER_WINDOW: '0', RATE_LIMIT_BUYER_PER_WINDOW: '0' }).rateLimits).toMatchObject({
      limit: 0,
      buyerLimit: 0,
    });
    expect(loadConfig({ REDIS_URL: 'redis://127.0.0.1:6379', MAX_DEPTH: '5' })).toMatchObject({
      live: { redisUrl: 'redis://127.0.0.1:6379' },
      limits: { maxDepth: 5 },
    });
  });

  it('has the documented defaults in the worker, where DATABASE_URL and API_KEYS are required', () => {
    expect(loadWorkerConfig(WORKER)).toMatchObject({
      runtime: { nodeEnv: 'production' },
      database: {
        url: WORKER.DATABASE_URL,
        neonWsProxy: undefined,
        timeouts: { connectMs: 5_000, statementMs: 30_000, lockMs: 10_000, idleInTransactionMs: 60_000 },
      },
      auth: {
        apiKeys: [
          { role: 'storefront', key: 'abcdefgh12_storefront_key' },
          { role: 'partner', key: 'partner1234_partner_key_x' },
        ],
      },
      edgeCache: { ttlSeconds: 2, staleWhileRevalidateSeconds: 10 },
      limits: { maxBodyBytes: 65_536, maxCost: 1_000 },
      orders: { maxActiveHolds: 5 },
    });
    // the sections both hosts read resolve the same from the same variables
    // the same orders section, except what the Node host resolves from its cores (CLAIM_LANES_PER_SKU; the Worker: 1)
    expect({ ...loadWorkerConfig(WORKER).orders, claimLanesPerSku: 0 }).toEqual({
      ...loadConfig({}).orders,
      claimLanesPerSku: 0,
    });
    expect(loadWorkerConfig(WORKER).orders.claimLanesPerSku).toBeUndefined();
    expect(loadWorkerConfig(WORKER).limits).toEqual(loadConfig({}).limits);
    expect(() => loadWorkerConfig({})).toThrow(/DATABASE_URL[\s\S]*API_KEYS/);
  });

  it('holds worker keys to the production length whatever NODE_ENV says, never printing the key', () => {
    for (const env of ['production', 'development', 'test']) {
      let message = '';
      try {
        loadWorkerConfig({
          ...WORKER,
          NODE_ENV: env,
          API_KEYS: 'storefront:abcdefgh12_storefront_key,admin:admin_key_23_characters',
        });
      } catch (err) {
        message = (err as Error).message;
      }
      expect(message).toMatch(/API_KEYS: entry 2 of 2 is shorter than 24 characters/);
      expect(message).not.toContain('admin_key_23_characters');
    }
  });

  it.each([
    ['MAX_BODY_BYTES', '10'],
    ['MAX_DEPTH', 'deep'],
    ['MAX_ALIASES', '-1'],
    ['MAX_TOKENS', '1e9'],
    ['MAX_COST', '2.5'],
    ['RATE_LIMIT_PER_WINDOW', '-1'],
    ['RATE_LIMIT_BUYER_PER_WINDOW', 'many'],
    ['TRUST_PROXY', 'yes'],
    ['MAX_ACTIVE_HOLDS', '-1'],
    ['MAX_SUBSCRIPTIONS_PER_SOCKET', '0'],
    ['MAX_SOCKETS_PER_CLIENT', '0'],
    ['MAX_SOCKETS_PER_IP', '1.5'],
    ['RATE_LIMIT_WINDOW_SECONDS', 'minute'],
    ['REDIS_URL', 'http://cache'],
  ])('refuses %s=%s on the Node host with a message naming the variable', (name, value) => {
    expect(() => loadConfig({ [name]: value })).toThrow(ConfigError);
    expect(() => loadConfig({ [name]: value })).toThrow(new RegExp(`${name}: `));
  });

  it.each([
    ['EDGE_CACHE_TTL_SECONDS', 'two'],
    ['EDGE_CACHE_SWR_SECONDS', '-1'],
    ['DATABASE_URL', 'mysql://x'],
    ['API_KEYS', 'root:abcdefgh12'],
    ['MAX_DEPTH', '0'],
  ])('refuses %s=%s in the worker with a message naming the variable', (name, value) => {
    expect(() => loadWorkerConfig({ ...WORKER, [name]: value })).toThrow(new RegExp(`${name}: `));
  });

  it('refuses the test-only diagnostics route in production, naming the variable', () => {
    expect(loadConfig({ LASTUNIT_TEST_DIAGNOSTICS: 'on' }).http.testDiagnostics).toBe(true);
    expect(() => loadConfig({ LASTUNIT_TEST_DIAGNOSTICS: 'on', NODE_ENV: 'production' })).toThrow(
      /LASTUNIT_TEST_DIAGNOSTICS: test-only/,
    );
  });
});
