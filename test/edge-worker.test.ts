import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KEYS, PLACE_ORDER, persistedRequest, startTestApp } from './support/app.js';
import { startLocalWorker, type LocalWorker } from '../kit/worker.js';

const TTL = 1;
const t = await startTestApp();
let w: LocalWorker;
beforeAll(async () => {
  w = await startLocalWorker({
    databaseUrl: t.dbUrl,
    vars: { EDGE_CACHE_TTL_SECONDS: String(TTL), EDGE_CACHE_SWR_SECONDS: '30' },
    name: 'edge',
  });
});
afterAll(() => w?.stop());

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const call = async (req: Request) => {
  const res = await w.fetch(req);
  return {
    status: res.status,
    headers: res.headers,
    cache: res.headers.get('x-lastunit-cache'),
    body: (await res.json()) as any,
  };
};
const availability = (sku: string, key = KEYS.storefront) =>
  call(persistedRequest('ProductAvailability', { sku }, key, 'GET', 'http://edge.test'));
const post = (query: string, variables: Record<string, unknown> = {}, key: string = KEYS.storefront) =>
  call(
    new Request('http://edge.test/graphql', {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/graphql-response+json',
        authorization: `Bearer ${key}`,
      },
      body: JSON.stringify({ query, variables }),
    }),
  );
const setStock = (sku: string, available: number) =>
  t.gql(
    `mutation { setStock(input: { sku: "${sku}", available: ${available} }) { userErrors { code } } }`,
    {},
    KEYS.admin,
  );

describe('the worker in workerd, on PostgreSQL through the Neon driver and the Cache API', () => {
  it('serves availability, then serves it again from the cache without reaching the database', async () => {
    await t.product('EDGE-1', 3);
    const first = await availability('EDGE-1');
    expect(first.status).toBe(200);
    expect(first.cache).toBe('MISS');
    expect(first.body.data.product.availability).toMatchObject({ sku: 'EDGE-1', available: 3, soldOut: false });
    expect(first.headers.get('cache-control')).toMatch(/public, max-age=1, stale-while-revalidate=30/);

    await sleep(300); // the first request's pool says goodbye to PostgreSQL after its response
    const before = { ...w.bridge.stats };
    const again = await Promise.all([
      availability('EDGE-1'),
      availability('EDGE-1', KEYS.storefront2),
      availability('EDGE-1', KEYS.partner),
    ]);
    for (const r of again) {
      expect(r.cache).toBe('HIT');
      expect(r.body).toEqual(first.body);
    }
    expect(w.bridge.stats).toEqual(before); // no connection, no message: the database never saw these
  });

  it('after the TTL serves the stale answer once while it revalidates, then the change is visible', async () => {
    await t.product('EDGE-2', 5);
    expect((await availability('EDGE-2')).body.data.product.availability.available).toBe(5);
    await setStock('EDGE-2', 0);
    expect((await availability('EDGE-2')).cache).toBe('HIT'); // within the TTL: the old figure, by design
    await sleep(TTL * 1000 + 200);
    const stale = await availability('EDGE-2');
    expect(stale.cache).toBe('STALE');
    expect(stale.body.data.product.availability.available).toBe(5);
    let fresh = await availability('EDGE-2');
    for (let i = 0; i < 20 && fresh.body.data.product.availability.available !== 0; i++) {
      await sleep(50);
      fresh = await availability('EDGE-2');
    }
    expect(fresh.cache).toBe('HIT');
    expect(fresh.body.data.product.availability).toMatchObject({ available: 0, soldOut: true });
  });

  it('never caches mutations, documents, or a customer order', async () => {
    await t.product('EDGE-3', 2);
    const placed = await post(PLACE_ORDER, {
      input: { idempotencyKey: 'edge-k1', customerId: 'c1', lines: [{ sku: 'EDGE-3', quantity: 1 }] },
    });
    expect(placed.body.data.placeOrder.order.status).toBe('RESERVED');
    expect(placed.cache).toBeNull();
    const id = placed.body.data.placeOrder.order.id;
    for (let i = 0; i < 2; i++) {
      const mine = await call(persistedRequest('Order', { id }, KEYS.storefront, 'GET', 'http://edge.test'));
      expect(mine.body.data.order.id).toBe(id);
      expect(mine.cache).toBeNull();
      const theirs = await call(persistedRequest('Order', { id }, KEYS.storefront2, 'GET', 'http://edge.test'));
      expect(theirs.body.data.order).toBeNull();
    }
    // a document sent with a cacheable id runs the document: it must neither be stored under the id nor answered from it
    const cacheableId = new URL(
      persistedRequest('ProductAvailability', { sku: 'EDGE-3' }, null, 'GET', 'http://edge.test').url,
    ).searchParams;
    const sneaky = new URL('http://edge.test/graphql');
    sneaky.searchParams.set('query', `query($id: ID!) { order(id: $id) { id customerId } }`);
    sneaky.searchParams.set('variables', JSON.stringify({ sku: 'EDGE-3', id }));
    sneaky.searchParams.set('extensions', cacheableId.get('extensions')!);
    for (let i = 0; i < 2; i++) {
      const r = await call(new Request(sneaky, { headers: { authorization: `Bearer ${KEYS.storefront}` } }));
      expect(r.cache).toBeNull();
    }
    const other = await availability('EDGE-3', KEYS.storefront2);
    expect(other.body.data.product.availability).toMatchObject({ available: 1 });
    expect(JSON.stringify(other.body)).not.toContain('customerId');
    const doc = await post(`{ product(sku: "EDGE-3") { availability { available } } }`);
    expect(doc.body.data.product.availability.available).toBe(1);
    expect(doc.cache).toBeNull();
  });

  it('lets a partner run manifest operations by id over GET (cacheable) and refuses its documents', async () => {
    await t.product('EDGE-P', 4);
    const byId = await call(
      persistedRequest('Products', { skus: ['EDGE-P'] }, KEYS.partner, 'GET', 'http://edge.test'),
    );
    expect(byId.status).toBe(200);
    expect(byId.body.data.products[0]).toMatchObject({
      sku: 'EDGE-P',
      price: { amount: 1000, currencyCode: 'USD' },
      availability: { available: 4 },
    });
    expect(byId.cache).toBe('MISS');
    expect(
      (await call(persistedRequest('Products', { skus: ['EDGE-P'] }, KEYS.partner, 'GET', 'http://edge.test'))).cache,
    ).toBe('HIT');
    const doc = await post(`{ products(skus: ["EDGE-P"]) { sku } }`, {}, KEYS.partner);
    expect(doc.status).toBe(403);
    expect(doc.body.errors[0].extensions.code).toBe('PERSISTED_QUERY_ONLY');
    const unknown = await call(
      new Request(`http://edge.test/graphql?documentId=${'0'.repeat(64)}`, {
        headers: { authorization: `Bearer ${KEYS.partner}` },
      }),
    );
    expect(unknown.status).toBe(404);
    expect(unknown.body.errors[0].extensions.code).toBe('PERSISTED_QUERY_NOT_FOUND');
  });

  it('applies the limits at the edge too', async () => {
    const big = await post(`{ __typename }`, { pad: 'x'.repeat(70_000) });
    expect(big.status).toBe(413);
    expect(big.body.errors[0].extensions.code).toBe('PAYLOAD_TOO_LARGE');
    const tokens = await post(`{ product(sku: "X") { ${'sku '.repeat(2000)} } }`);
    expect(tokens.status).toBe(400);
    expect(tokens.body.errors[0].extensions.code).toBe('TOO_MANY_TOKENS');
    expect((await availability('EDGE-1')).status).toBe(200);
    const aliases = await post(
      `{ ${Array.from({ length: 40 }, (_, i) => `a${i}: product(sku: "X") { sku }`).join(' ')} }`,
    );
    expect(aliases.status).toBe(400);
    expect(aliases.body.errors[0].extensions.code).toBe('TOO_MANY_ALIASES');
    const batch = await call(
      new Request('http://edge.test/graphql', {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${KEYS.storefront}` },
        body: JSON.stringify([{ query: '{ __typename }' }, { query: '{ __typename }' }]),
      }),
    );
    expect(batch.status).toBe(400);
    expect(batch.body.errors[0].extensions.code).toBe('BATCHING_NOT_SUPPORTED');
  });
});

describe('the last unit, through the worker and the Node host at once', () => {
  it('goes to exactly one of 100 buyers, 50 at the edge and 50 on Node', async () => {
    await t.product('EDGE-LAST', 1);
    const input = (i: number) => ({
      input: { idempotencyKey: `last-${i}`, customerId: `buyer-${i}`, lines: [{ sku: 'EDGE-LAST', quantity: 1 }] },
    });
    const answers = await Promise.all(
      Array.from({ length: 100 }, async (_, i) => {
        const r = i % 2 ? await post(PLACE_ORDER, input(i)) : await t.gql(PLACE_ORDER, input(i));
        if (r.body.errors) throw new Error(JSON.stringify(r.body.errors));
        return { via: i % 2 ? 'edge' : 'node', p: r.body.data.placeOrder };
      }),
    );
    const winners = answers.filter((a) => a.p.order?.status === 'RESERVED');
    expect(winners).toHaveLength(1);
    expect(answers.filter((a) => a.p.userErrors[0]?.code === 'SOLD_OUT')).toHaveLength(99);
    expect(await t.inventory('EDGE-LAST')).toEqual({ available: 0, reserved: 1, sold: 0 });
  });
});
