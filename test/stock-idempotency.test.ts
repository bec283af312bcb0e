// restock and setStock under an idempotencyKey (issue 9, item 7): an admin client's retry is applied once and the
// first answer replayed, even when the retries race; a different request under the same key is refused and writes
// nothing; a failed attempt (STALE) records no key. Through the real server over HTTP.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawnServer, type ServerProcess } from '../kit/server.js';
import { createTestDatabase } from './support/db.js';

const tdb = await createTestDatabase();
const ADMIN = { ops: 'stock_idem_admin_key_ops_01', tool: 'stock_idem_admin_key_tool_1' };
let srv: ServerProcess;
beforeAll(async () => {
  srv = await spawnServer({
    env: {
      DATABASE_URL: tdb.url,
      API_KEYS: `admin:ops:${ADMIN.ops},admin:tool:${ADMIN.tool}`,
      RATE_LIMIT_PER_WINDOW: '0',
    },
  });
});
afterAll(async () => {
  await srv?.stop();
  await tdb.drop();
});

async function gql(query: string, variables: Record<string, unknown>, key = ADMIN.ops) {
  const res = await fetch(srv.endpoint, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
    body: JSON.stringify({ query, variables }),
  });
  const body = (await res.json()) as any;
  if (body.errors) throw new Error(JSON.stringify(body.errors));
  return body.data;
}
const PAYLOAD = `replayed availability { available version } userErrors { code field }`;
const create = (sku: string, stock: number) =>
  gql(`mutation($i: CreateProductInput!) { createProduct(input: $i) { userErrors { code } } }`, {
    i: { sku, name: sku, priceAmount: 100, currencyCode: 'USD', initialStock: stock },
  });
const restock = (sku: string, quantity: number, idempotencyKey?: string, key = ADMIN.ops) =>
  gql(
    `mutation($i: RestockInput!) { restock(input: $i) { ${PAYLOAD} } }`,
    { i: { sku, quantity, idempotencyKey } },
    key,
  ).then((d) => d.restock);
const setStock = (sku: string, available: number, idempotencyKey?: string, expectedAvailable?: number) =>
  gql(`mutation($i: SetStockInput!) { setStock(input: $i) { ${PAYLOAD} } }`, {
    i: { sku, available, idempotencyKey, expectedAvailable },
  }).then((d) => d.setStock);
const available = async (sku: string) =>
  (await tdb.db.query('SELECT available FROM inventory WHERE sku = $1', [sku])).rows[0].available as number;

describe('restock with an idempotencyKey', () => {
  it('adds the units once; a retry replays the first answer', async () => {
    await create('IDEM-R', 10);
    const first = await restock('IDEM-R', 5, 'restock-1');
    expect(first).toMatchObject({ replayed: false, availability: { available: 15 }, userErrors: [] });
    const retry = await restock('IDEM-R', 5, 'restock-1');
    expect(retry).toEqual({ ...first, replayed: true });
    expect(await available('IDEM-R')).toBe(15);
    // without a key, a repeat is a second restock, as before
    await restock('IDEM-R', 5);
    await restock('IDEM-R', 5);
    expect(await available('IDEM-R')).toBe(25);
  });

  it('applies once when 20 retries race', async () => {
    await create('IDEM-RACE', 0);
    const all = await Promise.all(Array.from({ length: 20 }, () => restock('IDEM-RACE', 3, 'race-1')));
    expect(await available('IDEM-RACE')).toBe(3);
    expect(all.filter((r) => !r.replayed)).toHaveLength(1);
    expect(new Set(all.map((r) => JSON.stringify(r.availability))).size).toBe(1);
  });

  it('refuses a different request under the same key, writing nothing; keys are per client', async () => {
    await create('IDEM-X', 10);
    await restock('IDEM-X', 1, 'shared-key');
    expect(await restock('IDEM-X', 2, 'shared-key')).toMatchObject({
      availability: null,
      userErrors: [{ code: 'IDEMPOTENCY_KEY_REUSED', field: ['input', 'idempotencyKey'] }],
    });
    expect(await setStock('IDEM-X', 0, 'shared-key')).toMatchObject({
      availability: null,
      userErrors: [{ code: 'IDEMPOTENCY_KEY_REUSED' }],
    });
    expect(await available('IDEM-X')).toBe(11);
    // another admin client's key of the same name is its own
    expect(await restock('IDEM-X', 2, 'shared-key', ADMIN.tool)).toMatchObject({
      replayed: false,
      availability: { available: 13 },
    });
  });
});

describe('setStock with an idempotencyKey', () => {
  it('replays the first answer instead of undoing the writes made since', async () => {
    await create('IDEM-S', 10);
    const first = await setStock('IDEM-S', 50, 'count-1');
    expect(first).toMatchObject({ replayed: false, availability: { available: 50 } });
    await restock('IDEM-S', 5); // a delivery arrives between the stock-take and its retry
    expect(await setStock('IDEM-S', 50, 'count-1')).toEqual({ ...first, replayed: true });
    expect(await available('IDEM-S')).toBe(55);
  });

  it('records no key for a refused attempt (STALE): the retry with the right figure applies', async () => {
    await create('IDEM-STALE', 10);
    expect(await setStock('IDEM-STALE', 3, 'count-2', 9)).toMatchObject({
      availability: null,
      userErrors: [{ code: 'STALE' }],
    });
    expect(await setStock('IDEM-STALE', 3, 'count-2', 10)).toMatchObject({
      replayed: false,
      availability: { available: 3 },
    });
    expect(await available('IDEM-STALE')).toBe(3);
  });
});
