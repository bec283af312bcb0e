import { describe, expect, it } from 'vitest';
import path from 'node:path';
import { readFile } from 'node:fs/promises';
import { buildManifest } from '../edge/persisted-build.js';
import { shippedManifest, toApolloManifest } from '../edge/persisted-manifest.js';
import { sha256Hex } from '../common/hash.js';
import { KEYS, operationId, startTestApp } from './support/app.js';

const t = await startTestApp();
await t.product('PQ-1', 3);

describe('the persisted operations manifest', () => {
  it('is up to date with edge/operations (run `npm run persisted:build` after editing them)', async () => {
    expect(await buildManifest(path.resolve(import.meta.dirname, '../edge/operations'))).toEqual(shippedManifest);
  });

  it("is shipped in Apollo's format too, in step with it: edge/persisted-query-manifest.json (same ids, names and bodies)", async () => {
    const apollo = JSON.parse(
      await readFile(path.resolve(import.meta.dirname, '../edge/persisted-query-manifest.json'), 'utf8'),
    );
    expect(apollo).toEqual(toApolloManifest(shippedManifest));
    expect(apollo.operations).toHaveLength(Object.keys(shippedManifest.operations).length);
    // what @apollo/persisted-query-lists and our server both rely on: the id is the sha256 of the body as written
    for (const op of apollo.operations) expect(await sha256Hex(op.body)).toBe(op.id);
  });

  it('marks only public reads as edge-cacheable', () => {
    const cacheable = Object.values(shippedManifest.operations)
      .filter((o) => o.cacheable)
      .map((o) => o.name)
      .sort();
    expect(cacheable).toEqual(['ProductAvailability', 'Products', 'ProductsAvailability']);
  });
});

describe('persisted operations on the Node host', () => {
  it('answers a partner running a manifest query by id over GET, and a manifest mutation by id over POST', async () => {
    const r = await t.persisted('ProductAvailability', { sku: 'PQ-1' }, KEYS.partner);
    expect(r.status).toBe(200);
    expect(r.body.data.product.availability).toMatchObject({ available: 3 });
    const placed = await t.persisted(
      'PlaceOrder',
      { input: { idempotencyKey: 'pq-1', customerId: 'p1', lines: [{ sku: 'PQ-1', quantity: 1 }] } },
      KEYS.partner,
    );
    expect(placed.body.data.placeOrder.order.status).toBe('RESERVED');
    const byDocumentId = await t.app.request(
      `/graphql?documentId=${operationId('ProductAvailability')}&variables=${encodeURIComponent('{"sku":"PQ-1"}')}`,
      {
        headers: { authorization: `Bearer ${KEYS.partner}` },
      },
    );
    expect(((await byDocumentId.json()) as any).data.product.availability.available).toBe(2);
  });

  it('refuses a partner document with PERSISTED_QUERY_ONLY (403), over POST and GET', async () => {
    const post = await t.gql(`{ product(sku: "PQ-1") { sku } }`, {}, KEYS.partner);
    expect(post.status).toBe(403);
    expect(post.body.errors[0].extensions.code).toBe('PERSISTED_QUERY_ONLY');
    const get = await t.app.request(`/graphql?query=${encodeURIComponent('{ product(sku: "PQ-1") { sku } }')}`, {
      headers: { authorization: `Bearer ${KEYS.partner}` },
    });
    expect(get.status).toBe(403);
  });

  it('answers an unknown id with PERSISTED_QUERY_NOT_FOUND (404), for every role, never a 500', async () => {
    for (const key of [KEYS.partner, KEYS.storefront, KEYS.admin]) {
      const r = await t.app.request(
        `/graphql?extensions=${encodeURIComponent(JSON.stringify({ persistedQuery: { version: 1, sha256Hash: 'f'.repeat(64) } }))}`,
        {
          headers: { authorization: `Bearer ${key}` },
        },
      );
      expect(r.status).toBe(404);
      expect(((await r.json()) as any).errors[0].extensions.code).toBe('PERSISTED_QUERY_NOT_FOUND');
    }
    const none = await t.app.request('/graphql', {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${KEYS.partner}` },
      body: '{}',
    });
    expect(none.status).toBe(400);
    expect(((await none.json()) as any).errors[0].extensions.code).toBe('PERSISTED_QUERY_ID_REQUIRED');
  });

  it('lets storefront and admin keys send documents too', async () => {
    expect((await t.gql(`{ product(sku: "PQ-1") { sku } }`, {}, KEYS.storefront)).body.data.product.sku).toBe('PQ-1');
    expect((await t.gql(`{ product(sku: "PQ-1") { sku } }`, {}, KEYS.admin)).body.data.product.sku).toBe('PQ-1');
    expect((await t.persisted('ProductAvailability', { sku: 'PQ-1' }, KEYS.storefront)).status).toBe(200);
  });
});
