// Rate limits that protect without throttling a sale, seen by a real HTTP client and a real graphql-ws client against
// the real server: per-key limits sized per role with RateLimit-* headers on every answer, per-buyer limits on
// placeOrder, the same key limit on graphql-ws, and RATE_LIMIT_PER_WINDOW=0 turning the key limit off.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawnServer, type ServerProcess } from '../kit/server.js';
import { persistedRequest } from '../kit/persisted.js';
import { createTestDatabase } from './support/db.js';
import { openSocket } from './support/ws-raw.js';
import { uniquePrefix } from './support/redis.js';

const tdb = await createTestDatabase();
afterAll(() => tdb.drop());
const K = {
  shop: 'rl_storefront_key_000001',
  shop2: 'rl_storefront_key_000002',
  shop3: 'rl_storefront_key_000003',
  shop4: 'rl_storefront_key_000004',
  partner: 'rl_partner_key_000000001',
  admin: 'rl_admin_key_00000000001',
  web: 'rl_public_key_0000000001',
};
const API_KEYS = [
  `storefront:shop:${K.shop}`,
  `storefront:shop2:${K.shop2}`,
  `storefront:shop3:${K.shop3}`,
  `storefront:shop4:${K.shop4}`,
  `partner:partner:${K.partner}`,
  `admin:ops:${K.admin}`,
  `public:web:${K.web}`,
].join(',');
let defaults: ServerProcess;
let small: ServerProcess;
let off: ServerProcess;
beforeAll(async () => {
  // with REDIS_URL the counts live in Redis for a window (an hour for `small`): a prefix of this run's own, so an earlier
  // run (or another checkout's, on a shared Redis) has not spent these keys' budgets
  const env = { DATABASE_URL: tdb.url, API_KEYS, REDIS_KEY_PREFIX: uniquePrefix('rl') };
  [defaults, small, off] = await Promise.all([
    spawnServer({ env }),
    // an hour's window: these tests count to a few within one window (a minute's could turn over mid-test)
    spawnServer({
      env: {
        ...env,
        RATE_LIMIT_PER_WINDOW: '8',
        RATE_LIMIT_BUYER_PER_WINDOW: '3',
        RATE_LIMIT_WINDOW_SECONDS: '3600',
        TRUST_PROXY: '1',
      },
    }),
    spawnServer({ env: { ...env, RATE_LIMIT_PER_WINDOW: '0' } }),
  ]);
  await tdb.db.query(`INSERT INTO products (sku, name, price_amount, currency) VALUES ('RL-1', 'x', 100, 'USD')`);
  await tdb.db.query(`INSERT INTO inventory (sku, available) VALUES ('RL-1', 1000)`);
});
afterAll(() => Promise.all([defaults, small, off].map((s) => s?.stop())));

const post = (
  srv: ServerProcess,
  key: string,
  query: string,
  variables: Record<string, unknown> = {},
  headers: Record<string, string> = {},
) =>
  fetch(srv.endpoint, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}`, ...headers },
    body: JSON.stringify({ query, variables }),
  });
const limitHeaders = (res: Response) => ({
  limit: res.headers.get('ratelimit-limit'),
  remaining: res.headers.get('ratelimit-remaining'),
  reset: res.headers.get('ratelimit-reset'),
  policy: res.headers.get('ratelimit-policy'),
});
let n = 0;
const PLACE = `mutation($i: PlaceOrderInput!) { placeOrder(input: $i) { order { status } userErrors { code } } }`;
const placeInput = (customerId: string) => ({
  i: { idempotencyKey: `rl-${++n}`, customerId, lines: [{ sku: 'RL-1', quantity: 1 }] },
});

describe('the per-key rate limit', () => {
  it('has defaults sized per role, and its RateLimit-* headers reach a real HTTP client on every answer', async () => {
    const expected = {
      storefront: [K.shop, '300000'],
      partner: [K.partner, '60000'],
      admin: [K.admin, '6000'],
    } as const;
    for (const [role, [key, limit]] of Object.entries(expected)) {
      // a partner may run persisted operations only: its answer is a 403, and it still carries the headers
      const res = await post(defaults, key, `{ product(sku: "RL-1") { sku } }`);
      expect(res.status, role).toBe(role === 'partner' ? 403 : 200);
      const h = limitHeaders(res);
      expect(h, role).toMatchObject({ limit, policy: `${limit};w=60` });
      expect(Number(h.remaining), role).toBe(Number(limit) - 1);
      expect(Number(h.reset)).toBeGreaterThanOrEqual(1);
      expect(Number(h.reset)).toBeLessThanOrEqual(60);
    }
    // a refused operation (400) and a persisted GET carry them too, counted (below 299999 unless a new minute began)
    const deep = await post(defaults, K.shop, `{ product(sku: "RL-1") { sku ${'x '.repeat(2000)} } }`);
    expect(deep.status).toBe(400);
    const get = await fetch(persistedRequest('ProductAvailability', { sku: 'RL-1' }, K.shop, 'GET', defaults.url));
    expect(get.status).toBe(200);
    for (const res of [deep, get]) {
      expect(limitHeaders(res)).toMatchObject({ limit: '300000', policy: '300000;w=60' });
      expect(Number(limitHeaders(res).remaining)).toBeLessThan(300_000);
    }
    expect(Number(limitHeaders(get).remaining)).toBeLessThan(Number(limitHeaders(deep).remaining) + 1);
  });

  it('answers 429 with Retry-After past the limit, per key', async () => {
    const statuses: number[] = [];
    let last!: Response;
    for (let i = 0; i < 10; i++) {
      last = await post(small, K.shop, `{ __typename }`);
      statuses.push(last.status);
    }
    expect(statuses).toEqual([...Array(8).fill(200), 429, 429]);
    expect(limitHeaders(last)).toMatchObject({ limit: '8', remaining: '0', policy: '8;w=3600' });
    expect(Number(last.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(((await last.json()) as any).errors[0].extensions).toMatchObject({ code: 'RATE_LIMITED' });
    expect((await post(small, K.shop2, `{ __typename }`)).status).toBe(200); // another client has its own budget
  });

  it('is off with RATE_LIMIT_PER_WINDOW=0: no 429 and no RateLimit headers', async () => {
    const answers = await Promise.all(Array.from({ length: 40 }, () => post(off, K.admin, `{ __typename }`)));
    expect(answers.map((a) => a.status)).toEqual(Array(40).fill(200));
    expect(limitHeaders(answers[0]!).limit).toBeNull();
  });
});

describe('the per-buyer limit on placeOrder', () => {
  it('stops one storefront customer at RATE_LIMIT_BUYER_PER_WINDOW while the same key serves others', async () => {
    const statuses = [];
    for (let i = 0; i < 4; i++) statuses.push((await post(small, K.shop3, PLACE, placeInput('eager'))).status);
    expect(statuses).toEqual([200, 200, 200, 429]);
    const refused = await post(small, K.shop3, PLACE, placeInput('eager'));
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(limitHeaders(refused)).toMatchObject({ limit: '3', remaining: '0', policy: '3;w=3600' });
    const body = (await refused.json()) as any;
    expect(body.errors[0].extensions).toMatchObject({ code: 'RATE_LIMITED', scope: 'buyer' });
    expect(body.data?.placeOrder ?? null).toBeNull();
    const other = await post(small, K.shop3, PLACE, placeInput('patient'));
    expect(other.status).toBe(200);
    expect(((await other.json()) as any).data.placeOrder.order.status).toBe('RESERVED');
    // nothing was executed for the refused attempts: three orders for 'eager'
    const { rows } = await tdb.db.query(
      `SELECT count(*)::int AS n FROM orders WHERE client_id = 'shop3' AND customer_id = 'eager'`,
    );
    expect(rows[0].n).toBe(3);
  });

  it('stops one address on a public key, whatever customerIds it sends, while other addresses go on', async () => {
    const fromBrowser = (customerId: string, ip: string) => {
      const req = persistedRequest('PlaceOrder', { input: placeInput(customerId).i }, K.web, 'POST', small.url);
      req.headers.set('x-forwarded-for', ip);
      return fetch(req);
    };
    const statuses = [];
    for (let i = 0; i < 4; i++) statuses.push((await fromBrowser(`shopper-${i}`, '203.0.113.50')).status);
    expect(statuses).toEqual([200, 200, 200, 429]);
    expect((await fromBrowser('shopper-9', '198.51.100.50')).status).toBe(200);
  });
});

describe('the per-key rate limit on graphql-ws', () => {
  it('counts connections and subscriptions like HTTP requests: past the limit a subscription gets RATE_LIMITED, a connection 4429', async () => {
    const s = openSocket(small.url, K.shop4); // connection_init: 1
    await s.acked;
    for (let i = 0; i < 8; i++)
      s.subscribe(`s${i}`, `subscription { availabilityChanged(skus: ["RL-1"]) { available } }`);
    const refused = await s.answer('s7', ['error']); // subscriptions 1..7 fit (2..8), the 8th is the 9th request
    expect(refused.payload[0].extensions).toMatchObject({ code: 'RATE_LIMITED' });
    expect(s.messages.filter((m) => m.type === 'error').map((m) => m.id)).toEqual(['s7']);
    const late = openSocket(small.url, K.shop4);
    expect((await late.closed).code).toBe(4429);
    s.ws.close();
  });
});
