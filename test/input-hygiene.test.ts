// Invalid input is logged at warn without a stack (issue 9, item 7): a NUL byte in product(sku), which PostgreSQL
// cannot store, is refused with BAD_USER_INPUT before it reaches the database, in a literal or a variable, and the
// server's log gets one warn line, no error line and no stack. Through the real server and its real log.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawnServer, type ServerProcess } from '../kit/server.js';
import { KEYS } from '../kit/keys.js';
import { createTestDatabase } from './support/db.js';

const tdb = await createTestDatabase();
let srv: ServerProcess;
beforeAll(async () => {
  srv = await spawnServer({ env: { DATABASE_URL: tdb.url, API_KEYS: `storefront:${KEYS.storefront}`, LOG_LEVEL: 'warn' } });
});
afterAll(async () => {
  await srv?.stop();
  await tdb.drop();
});

const gql = async (query: string, variables: Record<string, unknown> = {}) => {
  const res = await fetch(srv.endpoint, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${KEYS.storefront}` },
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

describe('a NUL byte in product(sku)', () => {
  it('is refused with BAD_USER_INPUT and logged once at warn, without a stack, in a variable or a literal', async () => {
    for (const send of [
      () => gql(`query($sku: String!) { product(sku: $sku) { sku } }`, { sku: 'a\u0000b' }),
      () => gql(`{ product(sku: "a\\u0000b") { sku } }`),
    ]) {
      const from = srv.output().length;
      const r = await send();
      expect(r.data?.product ?? null).toBeNull();
      expect(r.errors[0].extensions.code).toBe('BAD_USER_INPUT');
      expect(r.errors[0].message).toMatch(/NUL/);
      await expect.poll(() => logSince(from).length).toBeGreaterThan(0);
      const lines = logSince(from);
      expect(lines.map((l) => l.level)).toEqual([40]);
      expect(JSON.stringify(lines)).not.toMatch(/stack|\bat \w+ \(/);
    }
    // and the same server still answers the valid request
    expect((await gql(`{ product(sku: "NOPE") { sku } }`)).data).toEqual({ product: null });
  });
});
