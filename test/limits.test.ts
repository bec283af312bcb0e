import { describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { KEYS, startTestApp } from './support/app.js';
import { memoryRateLimitStore, rateLimit } from '../app/rate-limit.js';
import { redisOrMemoryRateLimitStore, redisRateLimitStore } from '../node/rate-limit-redis.js';
import { DEAD_REDIS_URL, REDIS_URL, redisAvailable, uniquePrefix } from './support/redis.js';
import { createTestDatabase } from './support/db.js';
import { spawnServer } from '../kit/server.js';

const hasRedis = await redisAvailable();

// Default limits except depth: the schema has no cycles, so no query can reach the default depth of 8; 4 shows the rule.
const t = await startTestApp({ limits: { maxDepth: 4 } });
await t.product('LIM-1', 10);

const AVAILABILITY = `{ product(sku: "LIM-1") { availability { available } } }`;
const raw = async (body: string, contentType = 'application/json'): Promise<Response> =>
  t.app.request('/graphql', {
    method: 'POST',
    headers: { 'content-type': contentType, authorization: `Bearer ${KEYS.storefront}` },
    body,
  });

const ABUSE: Record<string, { send: () => Promise<Response>; status: number; code: string }> = {
  deep: {
    send: () =>
      raw(
        JSON.stringify({
          query: `mutation { placeOrder(input: { idempotencyKey: "d", customerId: "c", lines: [] }) { order { lines { unitPrice { amount } } } } }`,
        }),
      ),
    status: 400,
    code: 'QUERY_TOO_DEEP',
  },
  wide: {
    send: () =>
      raw(
        JSON.stringify({
          query: `{ products(skus: ["LIM-1"]) { ${'price { amount currencyCode } availability { sku available soldOut updatedAt } '.repeat(60)} } }`,
        }),
      ),
    status: 400,
    code: 'QUERY_TOO_COMPLEX',
  },
  aliasBomb: {
    send: () =>
      raw(
        JSON.stringify({
          query: `{ ${Array.from({ length: 40 }, (_, i) => `a${i}: product(sku: "LIM-1") { sku }`).join(' ')} }`,
        }),
      ),
    status: 400,
    code: 'TOO_MANY_ALIASES',
  },
  tokenFlood: {
    send: () => raw(JSON.stringify({ query: `{ product(sku: "LIM-1") { ${'sku '.repeat(3000)} } }` })),
    status: 400,
    code: 'TOO_MANY_TOKENS',
  },
  oversizedBody: {
    send: () => raw(JSON.stringify({ query: AVAILABILITY, variables: { pad: 'x'.repeat(70_000) } })),
    status: 413,
    code: 'PAYLOAD_TOO_LARGE',
  },
  batch: {
    send: () => raw(JSON.stringify([{ query: AVAILABILITY }, { query: AVAILABILITY }])),
    status: 400,
    code: 'BATCHING_NOT_SUPPORTED',
  },
};

describe('limits on the Node host', () => {
  for (const [name, abuse] of Object.entries(ABUSE)) {
    it(`refuses a ${name} request with ${abuse.code} and HTTP ${abuse.status}`, async () => {
      const res = await abuse.send();
      const body = (await res.json()) as any;
      expect(res.status, JSON.stringify(body)).toBe(abuse.status);
      expect(body.errors[0].extensions.code).toBe(abuse.code);
      expect(body.data ?? null).toBeNull();
    });
  }

  it('keeps answering normal traffic while abusive requests pour in', async () => {
    const abusive = Object.values(ABUSE);
    const all = await Promise.all(
      Array.from({ length: 120 }, async (_, i) => {
        if (i % 2) return { normal: false, status: (await abusive[i % abusive.length]!.send()).status };
        const r = await t.gql(AVAILABILITY);
        return { normal: true, status: r.status, available: r.body.data?.product?.availability?.available };
      }),
    );
    const normal = all.filter((a) => a.normal);
    expect(normal).toHaveLength(60);
    for (const n of normal) expect(n).toMatchObject({ status: 200, available: 10 });
    for (const a of all.filter((x) => !x.normal)) expect([400, 413]).toContain(a.status);
  });

  it('allows the operations the project ships within the default limits', async () => {
    const r = await t.gql(
      `mutation($input: PlaceOrderInput!) { placeOrder(input: $input) { order { id status total { amount } } userErrors { code } } }`,
      {
        input: { idempotencyKey: 'lim-ok', customerId: 'c', lines: [{ sku: 'LIM-1', quantity: 1 }] },
      },
    );
    expect(r.body.data.placeOrder.order.status).toBe('RESERVED');
  });
});

describe('introspection', () => {
  it('is refused in production with INTROSPECTION_DISABLED, and allowed elsewhere', async () => {
    const prod = await startTestApp({ production: true });
    for (const q of [
      `{ __schema { types { name } } }`,
      `{ __type(name: "Product") { name } }`,
      `{ product(sku: "x") { ... on Product { sku } } ... { __schema { queryType { name } } } }`,
    ]) {
      const r = await prod.gql(q);
      expect(r.status).toBe(400);
      expect(r.body.errors[0].extensions.code).toBe('INTROSPECTION_DISABLED');
    }
    expect((await prod.gql(`{ __typename }`)).body.data).toEqual({ __typename: 'Query' });
    expect((await t.gql(`{ __schema { queryType { name } } }`)).body.data.__schema.queryType.name).toBe('Query');
  });
});

describe('the per-key rate limit', () => {
  const exercise = async (store: Parameters<typeof rateLimit>[0]['store']) => {
    const rl = await startTestApp({ rateLimit: rateLimit({ limit: 5, windowSeconds: 60, store }) });
    const statuses = [];
    for (let i = 0; i < 7; i++) statuses.push((await rl.gql(`{ __typename }`)).status);
    expect(statuses).toEqual([200, 200, 200, 200, 200, 429, 429]);
    const res = await rl.app.request('/graphql', {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${KEYS.storefront}` },
      body: '{"query":"{ __typename }"}',
    });
    expect(res.status).toBe(429);
    expect(Number(res.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(((await res.json()) as any).errors[0].extensions.code).toBe('RATE_LIMITED');
    // another key has its own budget
    expect((await rl.gql(`{ __typename }`, {}, KEYS.storefront2)).status).toBe(200);
  };

  it('answers 429 with Retry-After past the limit, per key (in memory)', () => exercise(memoryRateLimitStore()));

  it('counts in memory per key and per fixed window: a new window starts every key at 1, windows of two lengths apart', async () => {
    let t = 120_000 + 59_000; // one second before a 60 s window turns
    const store = memoryRateLimitStore(() => t);
    expect(await store.hit('a', 60_000)).toEqual({ count: 1, resetMs: 1_000 });
    expect(await store.hit('a', 60_000)).toEqual({ count: 2, resetMs: 1_000 });
    expect(await store.hit('b', 60_000)).toEqual({ count: 1, resetMs: 1_000 });
    expect(await store.hit('a', 10_000)).toEqual({ count: 1, resetMs: 1_000 });
    t += 1_000; // the 60 s and 10 s windows turn
    expect(await store.hit('a', 60_000)).toEqual({ count: 1, resetMs: 60_000 });
    expect(await store.hit('a', 10_000)).toEqual({ count: 1, resetMs: 10_000 });
    t += 10_000; // only the 10 s window turns
    expect(await store.hit('a', 60_000)).toEqual({ count: 2, resetMs: 50_000 });
    expect(await store.hit('a', 10_000)).toEqual({ count: 1, resetMs: 10_000 });
  });

  it('lets requests through when its store fails, and says so', async () => {
    const failures: unknown[] = [];
    const store = { hit: async () => Promise.reject(new Error('redis down')) };
    const rl = await startTestApp({
      rateLimit: rateLimit({ limit: 1, windowSeconds: 60, store, onStoreError: (e) => failures.push(e) }),
    });
    for (let i = 0; i < 3; i++) expect((await rl.gql(`{ __typename }`)).status).toBe(200);
    expect(failures).toHaveLength(3);
  });

  it('counts in this process while Redis is not up, and in Redis once it is', async () => {
    const memory = memoryRateLimitStore(() => 0);
    const fellBack: unknown[] = [];
    let up = false;
    const calls: string[] = [];
    const shared = {
      hit: async (key: string) => {
        calls.push(key);
        if (key === 'fails') throw new Error('connection lost');
        return { count: 100, resetMs: 1 };
      },
    };
    let clock = 0;
    const store = redisOrMemoryRateLimitStore(
      shared,
      memory,
      () => up,
      (e) => fellBack.push(e),
      { coolOffMs: 5_000, now: () => clock },
    );
    // not up (not yet connected, or down): this process's windows, Redis not asked
    expect(await store.hit('a', 60_000)).toEqual({ count: 1, resetMs: 60_000 });
    expect(await store.hit('a', 60_000)).toEqual({ count: 2, resetMs: 60_000 });
    expect(calls).toEqual([]);
    up = true;
    expect(await store.hit('a', 60_000)).toEqual({ count: 100, resetMs: 1 });
    // a command that fails while Redis was thought up still counts, here, and says so
    expect(await store.hit('fails', 60_000)).toEqual({ count: 1, resetMs: 60_000 });
    expect(calls).toEqual(['a', 'fails']);
    expect(fellBack).toHaveLength(1);
    // a Redis that hangs with its connection open: after a failed command it is not asked for 5 s (no request waits
    // out a command timeout, none is logged), then asked again
    clock = 4_999;
    expect(await store.hit('a', 60_000)).toEqual({ count: 3, resetMs: 60_000 });
    expect(calls).toEqual(['a', 'fails']);
    clock = 5_000;
    expect(await store.hit('a', 60_000)).toEqual({ count: 100, resetMs: 1 });
    expect(calls).toEqual(['a', 'fails', 'a']);
    // requests that were waiting on it together fail together: one log line for them all
    const together = await Promise.all([store.hit('fails', 60_000), store.hit('fails', 60_000)]);
    expect(together.map((r) => r.count)).toEqual([2, 3]);
    expect(fellBack).toHaveLength(2);
  });

  it('holds the per-key limit on a host whose Redis is down, without a log line per request', {
    timeout: 60_000,
  }, async () => {
    const tdb = await createTestDatabase();
    const srv = await spawnServer({
      env: {
        DATABASE_URL: tdb.url,
        API_KEYS: `storefront:${KEYS.storefront}`,
        REDIS_URL: DEAD_REDIS_URL,
        RATE_LIMIT_PER_WINDOW: '3',
        LOG_LEVEL: 'warn',
        // one process: while Redis is down each process counts on its own (docs/edge.md), so two would answer 200 to
        // up to three requests each
        WEB_CONCURRENCY: '1',
      },
    });
    try {
      const from = srv.output().length;
      const statuses: number[] = [];
      for (let i = 0; i < 5; i++) {
        const res = await fetch(srv.endpoint, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${KEYS.storefront}` },
          body: JSON.stringify({ query: '{ __typename }' }),
        });
        statuses.push(res.status);
        await res.arrayBuffer();
      }
      // counted in the host's memory: 3 answered, then 429 (before, every request was let through and logged)
      expect(statuses).toEqual([200, 200, 200, 429, 429]);
      expect(srv.output().slice(from)).not.toContain('rate limit store failed');
    } finally {
      await srv.stop();
      await tdb.drop();
    }
  });

  it.skipIf(!hasRedis)(
    'answers 429 with Retry-After past the limit, per key (Redis, shared by instances)',
    async () => {
      const redis = new Redis(REDIS_URL);
      try {
        // a window of its own: a fresh prefix per run through the clock
        const base = Date.now() + Math.floor(Math.random() * 1e9) * 60_000;
        await exercise(redisRateLimitStore(redis, () => base));
      } finally {
        await redis.quit();
      }
    },
  );

  it.skipIf(!hasRedis)('counts apart under each REDIS_KEY_PREFIX (deployments sharing one Redis)', async () => {
    const redis = new Redis(REDIS_URL);
    try {
      const hour = 3_600_000;
      const start = Math.floor(Date.now() / hour) * hour;
      const now = () => start; // one window for all three hits
      const [a, b] = [uniquePrefix('rla'), uniquePrefix('rlb')].map((prefix) =>
        redisRateLimitStore(redis, now, prefix),
      );
      expect((await a!.hit('rl:shop', hour)).count).toBe(1);
      expect((await a!.hit('rl:shop', hour)).count).toBe(2);
      expect((await b!.hit('rl:shop', hour)).count).toBe(1);
    } finally {
      await redis.quit();
    }
  });
});
