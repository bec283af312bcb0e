// One operation per request (issue 9, item 6): a request naming two different operations (two persisted ids, or a
// document and a different id) is refused with 400 AMBIGUOUS_OPERATION before the edge cache or Yoga see it, and
// nothing it did is cached. Through the real Node host and the worker in workerd (Cache API on).
import { afterAll, describe, expect, it } from 'vitest';
import { KEYS, startTestApp } from './support/app.js';
import { operationId } from '../kit/persisted.js';
import { shippedManifest } from '../edge/persisted-manifest.js';
import { sha256Hex } from '../common/hash.js';
import { spawnServer, type ServerProcess } from '../kit/server.js';
import { WORKER_API_KEYS, startLocalWorker, type LocalWorker } from '../kit/worker.js';

const t = await startTestApp();
await t.product('AMBIG-1', 7);
const stops: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  for (const s of stops) await s();
});

const PRODUCTS = operationId('Products');
const AVAILABILITY = operationId('ProductsAvailability');
const variables = JSON.stringify({ skus: ['AMBIG-1'] });
const apq = (id: string) => JSON.stringify({ persistedQuery: { version: 1, sha256Hash: id } });
const headers = { authorization: `Bearer ${KEYS.storefront}`, accept: 'application/json' };

type Send = (req: Request) => Promise<Response>;
const get = (send: Send, base: string, qs: Record<string, string>) =>
  send(new Request(`${base}/graphql?${new URLSearchParams({ variables, ...qs })}`, { headers })).then(async (r) => ({
    status: r.status,
    cache: r.headers.get('x-lastunit-cache'),
    body: (await r.json()) as any,
  }));
const post = (send: Send, base: string, body: unknown, qs = '') =>
  send(
    new Request(`${base}/graphql${qs}`, {
      method: 'POST',
      headers: { ...headers, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    }),
  ).then(async (r) => ({
    status: r.status,
    body: (await r.json()) as any,
  }));

/** The refusals every host gives. */
async function refusesAmbiguous(send: Send, base: string) {
  // documentId names one operation, the APQ extension another
  const both = await get(send, base, { documentId: PRODUCTS, extensions: apq(AVAILABILITY) });
  expect(both.status).toBe(400);
  expect(both.body.errors[0].extensions.code).toBe('AMBIGUOUS_OPERATION');
  // the same in a POST body, and a body id against a query-string id
  expect(
    (
      await post(send, base, {
        documentId: PRODUCTS,
        extensions: JSON.parse(apq(AVAILABILITY)),
        variables: JSON.parse(variables),
      })
    ).status,
  ).toBe(400);
  expect(
    (
      await post(
        send,
        base,
        { extensions: JSON.parse(apq(AVAILABILITY)), variables: JSON.parse(variables) },
        `?documentId=${PRODUCTS}`,
      )
    ).status,
  ).toBe(400);
  // a document and a different id
  const docAndId = await post(send, base, { query: `{ __typename }`, documentId: PRODUCTS });
  expect(docAndId.status).toBe(400);
  expect(docAndId.body.errors[0].extensions.code).toBe('AMBIGUOUS_OPERATION');
  // a document with its own id (what Apollo's and urql's links resend after an unknown id) is one operation
  const doc = shippedManifest.operations[PRODUCTS]!.document;
  expect(await sha256Hex(doc)).toBe(PRODUCTS);
  const same = await post(send, base, {
    query: doc,
    extensions: JSON.parse(apq(PRODUCTS)),
    variables: JSON.parse(variables),
  });
  expect(same.status).toBe(200);
  expect(same.body.data.products[0].name).toBe('Product AMBIG-1');
  // and the same id twice ('sha256:'-prefixed or not) is one operation
  expect((await get(send, base, { documentId: `sha256:${PRODUCTS}`, extensions: apq(PRODUCTS) })).status).toBe(200);
}

describe('a request naming two different operations is refused', () => {
  it('on the Node host', async () => {
    const srv: ServerProcess = await spawnServer({ env: { DATABASE_URL: t.dbUrl, API_KEYS: WORKER_API_KEYS } });
    stops.push(() => srv.stop());
    await refusesAmbiguous((req) => fetch(req), srv.url);
  });

  it('in workerd, where nothing it did is cached: the next plain request for either operation is a MISS with its own answer', async () => {
    const w: LocalWorker = await startLocalWorker({
      databaseUrl: t.dbUrl,
      vars: { EDGE_CACHE_TTL_SECONDS: '60', EDGE_CACHE_SWR_SECONDS: '0' },
      name: 'ambiguous',
    });
    stops.push(() => w.stop());
    const base = 'https://edge.test';
    // twice: a poisoning attempt that got through once would be served from the cache the second time
    for (let i = 0; i < 2; i++) {
      const r = await get(w.fetch, base, { documentId: PRODUCTS, extensions: apq(AVAILABILITY) });
      expect(r.status).toBe(400);
      expect(r.cache).toBeNull();
    }
    const products = await get(w.fetch, base, { documentId: PRODUCTS });
    expect(products.status).toBe(200);
    expect(products.cache).toBe('MISS');
    expect(products.body.data.products[0]).toMatchObject({ sku: 'AMBIG-1', name: 'Product AMBIG-1' });
    const availability = await get(w.fetch, base, { extensions: apq(AVAILABILITY) });
    expect(availability.cache).toBe('MISS');
    expect(availability.body.data.products[0].availability).toBeDefined();
    expect((await get(w.fetch, base, { documentId: PRODUCTS })).cache).toBe('HIT');
    await refusesAmbiguous(w.fetch, base);
  });
});
