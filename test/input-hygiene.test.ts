// Invalid input is logged at warn without a stack (issue 9, item 7): a NUL byte in product(sku), which PostgreSQL
// cannot take, finds nothing without reaching the database; input that only the database refuses is answered 400
// BAD_USER_INPUT saying why, writes nothing, and gives the server's log one warn line, no error line and no stack.
// Through the real server and its real log.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawnServer, type ServerProcess } from '../kit/server.js';
import { KEYS } from '../kit/keys.js';
import { createTestDatabase } from './support/db.js';

const tdb = await createTestDatabase();
let srv: ServerProcess;
beforeAll(async () => {
  srv = await spawnServer({
    env: { DATABASE_URL: tdb.url, API_KEYS: `storefront:${KEYS.storefront},admin:${KEYS.admin}`, LOG_LEVEL: 'warn' },
  });
});
afterAll(async () => {
  await srv?.stop();
  await tdb.drop();
});

const gql = async (query: string, variables: Record<string, unknown> = {}, key = KEYS.storefront) => {
  const res = await fetch(srv.endpoint, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
    body: JSON.stringify({ query, variables }),
  });
  return (await res.json()) as any;
};
/** The server's log lines (pino JSON) printed since `from` characters of its output. */
const logSince = (from: number) =>
  srv
    .output()
    .slice(from)
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as { level: number; msg: string; [k: string]: unknown });

describe('invalid input', () => {
  it('a NUL byte in product(sku) or products(skus) finds nothing, without touching the database or the error log', async () => {
    const from = srv.output().length;
    const r = await gql(`query($sku: String!) { product(sku: $sku) { sku } products(skus: [$sku, "NOPE"]) { sku } }`, {
      sku: 'a\u0000b',
    });
    expect(r).toEqual({ data: { product: null, products: [null, null] } });
    expect((await gql(`{ product(sku: "a\\u0000b") { sku } }`)).data).toEqual({ product: null });
    expect(logSince(from).filter((l) => l.level >= 50)).toEqual([]);
  });

  it('a NUL byte in orders(customerId) finds nothing and in a cursor is a 400, without touching the database or the log', async () => {
    const from = srv.output().length;
    const q = `query($c: ID, $after: String) { orders(customerId: $c, after: $after) { edges { node { id } } pageInfo { hasNextPage endCursor } } }`;
    expect(await gql(q, { c: 'a\u0000b' })).toEqual({
      data: { orders: { edges: [], pageInfo: { hasNextPage: false, endCursor: null } } },
    });
    const cursor = (parts: string[]) => Buffer.from(JSON.stringify(parts)).toString('base64url'); // the shape this API gives out
    for (const [query, after] of [
      [q, cursor([new Date().toISOString(), '00000000-0000-4000-8000-00000000000\u0000'])],
      ['query($after: String) { catalog(after: $after) { edges { cursor } } }', cursor(['a\u0000b'])],
    ] as const) {
      const r = await gql(query, { after });
      expect(r.data ?? null).toBeNull();
      expect(r.errors.map((e: any) => [e.message, e.extensions?.code])).toEqual([
        ['after is not a cursor this API gave out', 'BAD_USER_INPUT'],
      ]);
    }
    expect(logSince(from)).toEqual([]); // nothing reached the database to fail there
  });

  it('input only the database refuses is a 400 BAD_USER_INPUT saying why, writes nothing, and is logged once at warn without a stack', async () => {
    const from = srv.output().length;
    // an admin write whose SKU PostgreSQL cannot take: the database refuses it (22021)
    const res = await fetch(srv.endpoint, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${KEYS.admin}` },
      body: JSON.stringify({
        query: `mutation($sku: String!) { restock(input: { sku: $sku, quantity: 1 }) { userErrors { code } } }`,
        variables: { sku: 'a\u0000b' },
      }),
    });
    expect(res.status).toBe(400);
    const r = (await res.json()) as any;
    expect(r.data ?? null).toBeNull();
    expect(r.errors).toEqual([
      expect.objectContaining({
        message: 'invalid input: a text value contains a NUL character or bytes that are not UTF-8',
        path: ['restock'],
        locations: [{ line: 1, column: 27 }],
        extensions: { code: 'BAD_USER_INPUT' },
      }),
    ]);
    await expect.poll(() => logSince(from).length).toBeGreaterThan(0);
    const lines = logSince(from);
    expect(lines.map((l) => l.level)).toEqual([40]);
    expect(lines[0]).toMatchObject({ code: '22021' });
    expect(JSON.stringify(lines)).not.toMatch(/stack|\bat \w+ \(/);
  });

  it('every admin input with a NUL character the database refuses is a 400 BAD_USER_INPUT and writes nothing', async () => {
    const created = await gql(
      `mutation { createProduct(input: { sku: "NUL-1", name: "Plain", priceAmount: 100, currencyCode: "USD", initialStock: 3 }) { userErrors { code } } }`,
      {},
      KEYS.admin,
    );
    expect(created.data.createProduct.userErrors).toEqual([]);
    const from = srv.output().length;
    const cases: [string, Record<string, unknown>, string][] = [
      [
        `mutation($name: String!) { createProduct(input: { sku: "NUL-2", name: $name, priceAmount: 100, currencyCode: "USD", initialStock: 1 }) { userErrors { code } } }`,
        { name: 'a\u0000b' },
        'createProduct',
      ],
      [
        `mutation($sku: String!) { setPurchaseLimit(input: { sku: $sku, limit: 2 }) { userErrors { code } } }`,
        { sku: 'NUL-1\u0000' },
        'setPurchaseLimit',
      ],
      [
        `mutation($sku: String!) { setStock(input: { sku: $sku, available: 9 }) { userErrors { code } } }`,
        { sku: 'NUL-1\u0000' },
        'setStock',
      ],
      [`query($id: ID!) { channel(id: $id) { id } }`, { id: 'a\u0000b' }, 'channel'],
    ];
    for (const [query, variables, field] of cases) {
      const res = await fetch(srv.endpoint, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${KEYS.admin}` },
        body: JSON.stringify({ query, variables }),
      });
      const r = (await res.json()) as any;
      expect([
        field,
        res.status,
        r.errors?.map((e: any) => [e.message.startsWith('invalid input: '), e.path, e.extensions?.code]),
      ]).toEqual([field, 400, [[true, [field], 'BAD_USER_INPUT']]]);
    }
    // nothing was written: no second product, NUL-1 as it was
    const check = await gql(
      `{ products(skus: ["NUL-1", "NUL-2"]) { sku purchaseLimit availability { available } } }`,
      {},
      KEYS.admin,
    );
    expect(check.data.products).toEqual([{ sku: 'NUL-1', purchaseLimit: null, availability: { available: 3 } }, null]);
    // one warn line per refused request, no error line
    await expect.poll(() => logSince(from).length).toBeGreaterThanOrEqual(cases.length);
    expect(logSince(from).map((l) => l.level)).toEqual(cases.map(() => 40));
  });
});
