// DRAW drops through the real server: entries between opensAt and closesAt, the reveal at close, winners in
// HMAC-SHA256(seed, entry id) order admitted for claimSeconds, a lapsed winner's unit passing to the next in draw order,
// and `npm run drop:verify` agreeing with the drawn drop and refusing a tampered entry list. docs/drops.md.
import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawnServer, type ServerProcess } from '../kit/server.js';
import { ROOT } from '../kit/root.js';
import { createTestDatabase } from './support/db.js';
import { auditLedger } from './support/ledger.js';
import { auditDrops } from './support/drop-ledger.js';
import { verifyDraw } from '../common/drop-verify.js';

const tdb = await createTestDatabase();
afterAll(() => tdb.drop());
const KEY = { shop: 'drops_draw_storefront_key1', admin: 'drops_draw_admin_key_00001' };
let srv: ServerProcess;
beforeAll(async () => {
  srv = await spawnServer({
    env: {
      DATABASE_URL: tdb.url,
      API_KEYS: `storefront:shop:${KEY.shop},admin:ops:${KEY.admin}`,
      SWEEP_INTERVAL_MS: '100',
      RATE_LIMIT_BUYER_PER_WINDOW: '0',
    },
  });
});
afterAll(() => srv?.stop());

type Data = Record<string, any>; // biome-ignore lint/suspicious/noExplicitAny: GraphQL answers, read by the assertions
async function gql(query: string, variables: Record<string, unknown>, key = KEY.shop): Promise<Data> {
  const res = await fetch(srv.endpoint, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
    body: JSON.stringify({ query, variables }),
  });
  const body = (await res.json()) as Data;
  if (res.status !== 200 || body.errors) throw new Error(`fault: ${res.status} ${JSON.stringify(body)}`);
  return body.data;
}
const inSeconds = (s: number) => new Date(Date.now() + s * 1000).toISOString();
const DROP = `id state seedCommitment seed entriesDigest drawOrder counts { entries admitted ordered lapsed waiting }`;
async function drawDrop(sku: string, stock: number, opensIn: number, closesIn: number) {
  await gql(
    `mutation($i: CreateProductInput!) { createProduct(input: $i) { userErrors { code } } }`,
    { i: { sku, name: sku, priceAmount: 900, currencyCode: 'USD', initialStock: stock } },
    KEY.admin,
  );
  const d = await gql(
    `mutation($i: CreateDropInput!) { createDrop(input: $i) { drop { ${DROP} } userErrors { code } } }`,
    { i: { sku, mode: 'DRAW', opensAt: inSeconds(opensIn), closesAt: inSeconds(closesIn), claimSeconds: 2 } },
    KEY.admin,
  );
  return d.createDrop.drop;
}
const enter = (dropId: string, customerId: string) =>
  gql(`mutation($i: EnterDropInput!) { enterDrop(input: $i) { entry { id state place } userErrors { code } } }`, {
    i: { dropId, customerId, idempotencyKey: `k-${customerId}` },
  }).then((d) => d.enterDrop);
const drop = (id: string) => gql(`query($id: ID!) { drop(id: $id) { ${DROP} } }`, { id }).then((d) => d.drop);
let n = 0;
const place = (customerId: string, sku: string) =>
  gql(`mutation($i: PlaceOrderInput!) { placeOrder(input: $i) { order { status } userErrors { code } } }`, {
    i: { idempotencyKey: `p-${++n}`, customerId, lines: [{ sku, quantity: 1 }] },
  }).then((d) => d.placeOrder);
const until = async <T>(f: () => Promise<T>, ok: (v: T) => boolean, ms = 15_000): Promise<T> => {
  const end = Date.now() + ms;
  for (;;) {
    const v = await f();
    if (ok(v) || Date.now() > end) return v;
    await new Promise((r) => setTimeout(r, 100));
  }
};
const verify = (...args: string[]) =>
  spawnSync(process.execPath, ['--import', 'tsx', 'node/drop-verify-cli.ts', ...args], {
    cwd: ROOT,
    env: { ...process.env, LASTUNIT_URL: srv.endpoint, LASTUNIT_API_KEY: KEY.shop },
    encoding: 'utf8',
    timeout: 60_000,
  });

describe('DRAW', () => {
  it('takes entries from opensAt only and refuses them after closesAt', async () => {
    const later = await drawDrop('DW-LATER', 1, 60, 120);
    expect((await enter(later.id, 'x')).userErrors).toEqual([{ code: 'DROP_NOT_OPEN' }]);
  });

  it('reveals the committed seed and the entries digest at close, admits winners in draw order, passes a lapsed win on, and verifies', async () => {
    const d = await drawDrop('DW-1', 2, -1, 3);
    expect(d).toMatchObject({ state: 'OPEN', seed: null, entriesDigest: null, drawOrder: [] });
    const customers = Array.from({ length: 8 }, (_, i) => `w${i}`);
    const entries = new Map<string, string>();
    for (const c of customers) {
      const e = await enter(d.id, c);
      expect(e.entry).toMatchObject({ state: 'WAITING', place: null });
      entries.set(e.entry.id, c);
    }
    // drawn by the sweeper once closesAt passed
    const drawn = await until(
      () => drop(d.id),
      (x) => x.counts.admitted === 2,
    );
    expect(drawn.seed).toMatch(/^[0-9a-f]{64}$/);
    expect(drawn.seedCommitment).toBe(d.seedCommitment);
    expect([...drawn.drawOrder].sort()).toEqual([...entries.keys()].sort());
    expect(await verifyDraw(drawn)).toMatchObject({ ok: true, problems: [] });
    expect((await enter(d.id, 'too-late')).userErrors).toEqual([{ code: 'DROP_CLOSED' }]);
    // the winners are the first two in draw order
    const states = async () =>
      new Map(
        (await tdb.db.query(`SELECT id::text, state FROM drop_entries WHERE drop_id = $1`, [d.id])).rows.map((r) => [
          r.id,
          r.state,
        ]),
      );
    const s = await states();
    const [w1, w2, third] = drawn.drawOrder as string[];
    expect([s.get(w1!), s.get(w2!)]).toEqual(['ADMITTED', 'ADMITTED']);
    expect(drawn.drawOrder.slice(2).every((id: string) => s.get(id) === 'WAITING')).toBe(true);
    // a loser cannot buy; the first winner does; the second lets its admission lapse: the third in draw order is next
    expect((await place(entries.get(third!)!, 'DW-1')).userErrors).toEqual([{ code: 'DROP_NOT_ADMITTED' }]);
    expect(await place(entries.get(w1!)!, 'DW-1')).toMatchObject({ order: { status: 'RESERVED' }, userErrors: [] });
    await until(states, (m) => m.get(third!) === 'ADMITTED');
    const after = await states();
    expect([after.get(w1!), after.get(w2!), after.get(third!)]).toEqual(['ORDERED', 'LAPSED', 'ADMITTED']);
    expect(await place(entries.get(third!)!, 'DW-1')).toMatchObject({ order: { status: 'RESERVED' } });
    expect(await auditLedger(tdb.db, { stocked: { 'DW-1': 2 } })).toEqual([]);
    expect(await auditDrops(tdb.db)).toEqual([]);

    // npm run drop:verify agrees with the drawn drop, and refuses a tampered entry list
    const ok = verify(d.id);
    expect(ok.stdout).toContain('drawn as published');
    expect(ok.status).toBe(0);
    const tampered = [...drawn.drawOrder];
    tampered[tampered.length - 1] = '00000000-0000-4000-8000-000000000000';
    const file = join(tmpdir(), `drop-verify-${process.pid}.json`);
    writeFileSync(file, JSON.stringify(tampered));
    const bad = verify(d.id, '--entries', file);
    expect(bad.stdout).toContain('does not match the published entriesDigest');
    expect(bad.status).toBe(1);
    // and a published order the seed does not give is refused too (the pure function, as a buyer runs it)
    const swapped = { ...drawn, drawOrder: [w2, w1, ...drawn.drawOrder.slice(2)] };
    expect((await verifyDraw(swapped)).problems).toEqual([
      'the published draw order is not the order the seed gives these entries',
    ]);
  });
});
