import { describe, expect, it } from 'vitest';
import { KEYS, startTestApp } from './support/app.js';

const t = await startTestApp();

describe('API keys', () => {
  it('answers 401 to a request without a key or with an unknown key', async () => {
    for (const key of [null, 'not-a-real-key']) {
      const r = await t.gql(`{ product(sku: "X") { sku } }`, {}, key);
      expect(r.status).toBe(401);
      expect(r.body.errors[0].extensions.code).toBe('UNAUTHENTICATED');
    }
    const raw = await t.app.request('/graphql', {
      method: 'POST',
      headers: { authorization: 'Basic abc', 'content-type': 'application/json' },
      body: '{"query":"{__typename}"}',
    });
    expect(raw.status).toBe(401);
    expect(raw.headers.get('www-authenticate')).toMatch(/Bearer/);
  });

  it('lets only admin keys change the catalog', async () => {
    const r = await t.gql(
      `mutation { restock(input: { sku: "X", quantity: 1 }) { userErrors { code } } }`,
      {},
      KEYS.storefront,
    );
    expect(r.status).toBe(403);
    expect(r.body.errors[0].extensions.code).toBe('FORBIDDEN');
    // partners may not even send a document (persisted operations only), and the manifest has no admin operation
    const p = await t.gql(
      `mutation { restock(input: { sku: "X", quantity: 1 }) { userErrors { code } } }`,
      {},
      KEYS.partner,
    );
    expect(p.status).toBe(403);
    expect(p.body.errors[0].extensions.code).toBe('PERSISTED_QUERY_ONLY');
  });

  it('lets an admin key place orders as a storefront key may (docs/api.md, "Who may call what")', async () => {
    const r = await t.gql(
      `mutation { placeOrder(input: { idempotencyKey: "a", customerId: "c", lines: [{ sku: "X", quantity: 1 }] }) { replayed userErrors { code } } }`,
      {},
      KEYS.admin,
    );
    expect([r.status, r.body.errors, r.body.data.placeOrder.userErrors.map((e: any) => e.code)]).toEqual([
      200,
      undefined,
      ['UNKNOWN_SKU'],
    ]);
  });

  it('shows an order only to the API client that placed it', async () => {
    await t.product('AUTH-1', 2);
    const { order } = await t.placeOrder({ idempotencyKey: 'mine', lines: [{ sku: 'AUTH-1', quantity: 1 }] });
    const q = `query($id: ID!) { order(id: $id) { id status } }`;
    expect((await t.gql(q, { id: order!.id })).body.data.order).toEqual({ id: order!.id, status: 'RESERVED' });
    expect((await t.gql(q, { id: order!.id }, KEYS.storefront2)).body.data.order).toBeNull();
    expect((await t.persisted('Order', { id: order!.id }, KEYS.partner)).body.data.order).toBeNull();
    expect((await t.gql(q, { id: 'garbage' })).body.data.order).toBeNull();
  });

  it('masks faults: a database failure reaches the client as a generic error, never its SQL', async () => {
    await t.db.query(`ALTER FUNCTION release_order(text, uuid, text) RENAME TO release_order_gone`);
    try {
      const r = await t.gql(
        `mutation { releaseReservation(input: { orderId: "00000000-0000-4000-8000-000000000000" }) { userErrors { code } } }`,
      );
      expect(r.body.errors[0].message).toBe('Unexpected error.');
      expect(JSON.stringify(r.body)).not.toMatch(/release_order|function|sql/i);
    } finally {
      await t.db.query(`ALTER FUNCTION release_order_gone(text, uuid, text) RENAME TO release_order`);
    }
  });

  it('keeps the code of a deliberate refusal (too many SKUs in one products query)', async () => {
    const r = await t.gql(
      `{ products(skus: [${Array.from({ length: 101 }, (_, i) => `"S${i}"`).join(',')}]) { sku } }`,
    );
    expect(r.body.errors[0]).toMatchObject({
      message: expect.stringMatching(/at most 100/),
      extensions: { code: 'BAD_USER_INPUT' },
    });
  });
});

describe('admin catalog mutations', () => {
  const AV = `availability { sku available soldOut updatedAt }`;
  it('creates a product and refuses a duplicate SKU or a bad field with userErrors', async () => {
    const c = `mutation($i: CreateProductInput!) { createProduct(input: $i) { product { sku name price { amount currencyCode } availability { available soldOut } } userErrors { code field message } } }`;
    const ok = await t.gql(
      c,
      { i: { sku: 'ADM-1', name: 'Hat', priceAmount: 1999, currencyCode: 'USD', initialStock: 3 } },
      KEYS.admin,
    );
    expect(ok.body.data.createProduct).toEqual({
      product: {
        sku: 'ADM-1',
        name: 'Hat',
        price: { amount: 1999, currencyCode: 'USD' },
        availability: { available: 3, soldOut: false },
      },
      userErrors: [],
    });
    const dup = await t.gql(c, { i: { sku: 'ADM-1', name: 'Hat 2', priceAmount: 1, currencyCode: 'USD' } }, KEYS.admin);
    expect(dup.body.data.createProduct).toMatchObject({
      product: null,
      userErrors: [{ code: 'INVALID_INPUT', field: ['input', 'sku'] }],
    });
    for (const [i, field] of [
      [{ sku: 'bad sku!', name: 'x', priceAmount: 1, currencyCode: 'USD' }, 'sku'],
      [{ sku: 'ADM-2', name: '', priceAmount: 1, currencyCode: 'USD' }, 'name'],
      [{ sku: 'ADM-2', name: 'x', priceAmount: -1, currencyCode: 'USD' }, 'priceAmount'],
      [{ sku: 'ADM-2', name: 'x', priceAmount: 1, currencyCode: 'usd' }, 'currencyCode'],
      [{ sku: 'ADM-2', name: 'x', priceAmount: 1, currencyCode: 'USD', initialStock: -5 }, 'initialStock'],
    ] as const) {
      const r = await t.gql(c, { i }, KEYS.admin);
      expect(r.body.data.createProduct.userErrors[0]).toMatchObject({ code: 'INVALID_INPUT', field: ['input', field] });
    }
    expect((await t.db.query(`SELECT count(*)::int AS n FROM products WHERE sku = 'ADM-2'`)).rows[0].n).toBe(0);
  });

  it('restocks only by a positive quantity and only a known SKU', async () => {
    await t.product('ADM-R', 1);
    const r = (q: number, sku = 'ADM-R') =>
      t.gql(
        `mutation { restock(input: { sku: "${sku}", quantity: ${q} }) { ${AV} userErrors { code field } } }`,
        {},
        KEYS.admin,
      );
    expect((await r(4)).body.data.restock.availability).toMatchObject({ sku: 'ADM-R', available: 5, soldOut: false });
    expect((await r(0)).body.data.restock.userErrors[0]).toMatchObject({
      code: 'INVALID_INPUT',
      field: ['input', 'quantity'],
    });
    expect((await r(-2)).body.data.restock.userErrors[0].code).toBe('INVALID_INPUT');
    expect((await r(1, 'NOPE')).body.data.restock.userErrors[0].code).toBe('UNKNOWN_SKU');
    expect(await t.inventory('ADM-R')).toEqual({ available: 5, reserved: 0, sold: 0 });
  });

  it('sets stock, with expectedAvailable as a compare-and-set that answers STALE', async () => {
    await t.product('ADM-S', 10);
    const s = (available: number, expected?: number) =>
      t.gql(
        `mutation($i: SetStockInput!) { setStock(input: $i) { ${AV} userErrors { code field message } } }`,
        { i: { sku: 'ADM-S', available, ...(expected === undefined ? {} : { expectedAvailable: expected }) } },
        KEYS.admin,
      );
    expect((await s(7)).body.data.setStock.availability.available).toBe(7);
    const stale = (await s(3, 10)).body.data.setStock;
    expect(stale).toMatchObject({
      availability: null,
      userErrors: [{ code: 'STALE', field: ['input', 'expectedAvailable'] }],
    });
    expect(stale.userErrors[0].message).toMatch(/7/);
    expect((await s(3, 7)).body.data.setStock.availability).toMatchObject({ available: 3 });
    expect((await s(0, 3)).body.data.setStock.availability).toMatchObject({ available: 0, soldOut: true });
    expect((await s(-1)).body.data.setStock.userErrors[0].code).toBe('INVALID_INPUT');
  });

  it('lets exactly one of 20 concurrent compare-and-sets from the same reading win', async () => {
    await t.product('ADM-CAS', 50);
    const answers = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        t.gql(
          `mutation { setStock(input: { sku: "ADM-CAS", available: ${100 + i}, expectedAvailable: 50 }) { userErrors { code } } }`,
          {},
          KEYS.admin,
        ),
      ),
    );
    const codes = answers.map((a) => a.body.data.setStock.userErrors[0]?.code ?? 'OK');
    expect(codes.filter((c) => c === 'OK')).toHaveLength(1);
    expect(codes.filter((c) => c === 'STALE')).toHaveLength(19);
  });
});

describe('operations endpoints', () => {
  it('serves /healthz and Prometheus /metrics with the placeOrder, claim, retry and release metrics', async () => {
    expect(await (await t.app.request('/healthz')).json()).toEqual({ status: 'ok' });
    await t.product('MET-1', 1);
    await t.placeOrder({ idempotencyKey: 'm1', lines: [{ sku: 'MET-1', quantity: 1 }] });
    await t.placeOrder({ idempotencyKey: 'm2', lines: [{ sku: 'MET-1', quantity: 1 }] });
    const text = await (await t.app.request('/metrics')).text();
    expect(text).toMatch(/lastunit_place_order_total\{outcome="RESERVED"\} [1-9]/);
    expect(text).toMatch(/lastunit_place_order_total\{outcome="SOLD_OUT"\} [1-9]/);
    expect(text).toMatch(/lastunit_claim_transaction_seconds_count [1-9]/);
    expect(text).toContain('lastunit_transaction_retries_total');
    expect(text).toContain('lastunit_reservations_released_total');
    expect(text).toContain('lastunit_reservations_expired_total');
  });
});
