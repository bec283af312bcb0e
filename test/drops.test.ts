// Drops through the real server (a child process, real HTTP, real PostgreSQL): createDrop's refusals, the QUEUE's
// fair start and admissions, and placeOrder's gate (DROP_NOT_ADMITTED, claims nothing). docs/drops.md.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawnServer, type ServerProcess } from '../kit/server.js';
import { createTestDatabase } from './support/db.js';
import { auditLedger } from './support/ledger.js';
import { auditDrops } from './support/drop-ledger.js';
import { subscribe } from './support/ws.js';

const tdb = await createTestDatabase();
afterAll(() => tdb.drop());
const KEY = { shop: 'drops_storefront_key_0001', admin: 'drops_admin_key_000000001', web: 'drops_public_key_00000001' };
let srv: ServerProcess;
beforeAll(async () => {
  srv = await spawnServer({
    env: {
      DATABASE_URL: tdb.url,
      API_KEYS: `storefront:shop:${KEY.shop},admin:ops:${KEY.admin},public:shop:${KEY.web}`,
      SWEEP_INTERVAL_MS: '100',
      TRUST_PROXY: '1', // the public key's buyer is the address a proxy we trust put in X-Forwarded-For
      BUYER_TOKEN_SECRET: 'drops_buyer_token_secret_0123456789abcdef',
      RATE_LIMIT_BUYER_PER_WINDOW: '0',
    },
  });
});
afterAll(() => srv?.stop());

async function gql(query: string, variables: Record<string, unknown>, key = KEY.shop, ip?: string) {
  const res = await fetch(srv.endpoint, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      authorization: `Bearer ${key}`,
      ...(ip ? { 'x-forwarded-for': ip } : {}),
    },
    body: JSON.stringify({ query, variables }),
  });
  const body = (await res.json()) as any;
  if (res.status !== 200 || body.errors) throw new Error(`fault: ${res.status} ${JSON.stringify(body)}`);
  return body.data;
}
const createProduct = (sku: string, stock: number) =>
  gql(
    `mutation($i: CreateProductInput!) { createProduct(input: $i) { userErrors { code } } }`,
    { i: { sku, name: sku, priceAmount: 500, currencyCode: 'USD', initialStock: stock } },
    KEY.admin,
  );
const DROP = `id sku mode state seedCommitment seed entriesDigest counts { entries waiting admitted ordered lapsed }`;
const createDrop = (i: Record<string, unknown>, key = KEY.admin) =>
  gql(
    `mutation($i: CreateDropInput!) { createDrop(input: $i) { drop { ${DROP} } userErrors { code field } } }`,
    { i },
    key,
  ).then((d) => d.createDrop);
const ENTRY = `id state place estimatedWaitSeconds admittedUntil orderId`;
const enter = (dropId: string, customerId: string, key = `e-${customerId}`) =>
  gql(`mutation($i: EnterDropInput!) { enterDrop(input: $i) { entry { ${ENTRY} } entryToken userErrors { code } } }`, {
    i: { dropId, customerId, idempotencyKey: key },
  }).then((d) => d.enterDrop);
let orderKeys = 0;
const place = (customerId: string, sku: string) =>
  gql(`mutation($i: PlaceOrderInput!) { placeOrder(input: $i) { order { id status } userErrors { code sku } } }`, {
    i: { idempotencyKey: `o-${++orderKeys}`, customerId, lines: [{ sku, quantity: 1 }] },
  }).then((d) => d.placeOrder);
const entry = (id: string) =>
  gql(`query($id: ID!) { dropEntry(id: $id) { ${ENTRY} } }`, { id }).then((d) => d.dropEntry);
const drop = (id: string) => gql(`query($id: ID!) { drop(id: $id) { ${DROP} } }`, { id }).then((d) => d.drop);
const inSeconds = (s: number) => new Date(Date.now() + s * 1000).toISOString();
const until = async <T>(f: () => Promise<T>, ok: (v: T) => boolean, ms = 15_000): Promise<T> => {
  const end = Date.now() + ms;
  for (;;) {
    const v = await f();
    if (ok(v) || Date.now() > end) return v;
    await new Promise((r) => setTimeout(r, 100));
  }
};
const inventory = async (sku: string) =>
  (await tdb.db.query(`SELECT available, reserved, sold FROM inventory WHERE sku = $1`, [sku])).rows[0];

describe('createDrop', () => {
  it('refuses an unknown SKU, closesAt before opensAt, a second drop for a SKU, and non-admin keys; writes nothing', async () => {
    await createProduct('DR-BAD', 5);
    const base = { sku: 'DR-BAD', mode: 'QUEUE', opensAt: inSeconds(60), closesAt: inSeconds(120), claimSeconds: 30 };
    expect(await createDrop({ ...base, sku: 'DR-NOPE' })).toEqual({
      drop: null,
      userErrors: [{ code: 'UNKNOWN_SKU', field: ['input', 'sku'] }],
    });
    expect(await createDrop({ ...base, closesAt: inSeconds(30) })).toEqual({
      drop: null,
      userErrors: [{ code: 'INVALID_INPUT', field: ['input', 'closesAt'] }],
    });
    expect((await createDrop({ ...base, claimSeconds: 0, maxPerCustomer: 0 })).userErrors).toHaveLength(2);
    expect((await tdb.db.query(`SELECT count(*)::int AS n FROM drops`)).rows[0].n).toBe(0);
    const made = await createDrop({ ...base, idempotencyKey: 'cd-1' });
    expect(made.drop).toMatchObject({ sku: 'DR-BAD', mode: 'QUEUE', state: 'SCHEDULED', seed: null });
    expect(made.drop.seedCommitment).toMatch(/^[0-9a-f]{64}$/);
    expect((await createDrop({ ...base, idempotencyKey: 'cd-1' })).drop.id).toBe(made.drop.id); // replayed
    expect((await createDrop(base)).userErrors).toEqual([{ code: 'DROP_EXISTS', field: ['input', 'sku'] }]);
    const res = await fetch(srv.endpoint, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${KEY.shop}` },
      body: JSON.stringify({
        query: `mutation($i: CreateDropInput!) { createDrop(input: $i) { drop { id } } }`,
        variables: { i: base },
      }),
    });
    expect(res.status).toBe(403);
  });
});

describe('QUEUE', () => {
  it('shuffles early entrants at opensAt, admits as many as can buy, gates placeOrder, lapses and admits the next', async () => {
    await createProduct('DR-Q', 2);
    const made = await createDrop({
      sku: 'DR-Q',
      mode: 'QUEUE',
      opensAt: inSeconds(2),
      closesAt: inSeconds(600),
      claimSeconds: 2,
    });
    const id = made.drop.id;
    const early: any[] = [];
    for (let i = 0; i < 6; i++) early.push(await enter(id, `q${i}`));
    expect(early.map((e) => e.entry.state)).toEqual(Array(6).fill('WAITING'));
    expect(early.every((e) => e.entry.place === null && e.entryToken?.startsWith('de_'))).toBe(true);
    // one entry per customer: the same key replays it (no new token), another key is refused
    const replay = await enter(id, 'q0');
    expect(replay).toMatchObject({ entry: { id: early[0].entry.id }, entryToken: null, userErrors: [] });
    expect((await enter(id, 'q0', 'other-key')).userErrors).toEqual([{ code: 'ALREADY_ENTERED' }]);
    // before opensAt nobody is admitted, and placeOrder for the SKU is refused without claiming
    const before = await place('q0', 'DR-Q');
    expect(before).toMatchObject({
      order: { status: 'REJECTED' },
      userErrors: [{ code: 'DROP_NOT_ADMITTED', sku: 'DR-Q' }],
    });
    expect(await inventory('DR-Q')).toEqual({ available: 2, reserved: 0, sold: 0 });
    // at opensAt (the sweeper): random places 1..6, two admitted (two units)
    const d = await until(
      () => drop(id),
      (x) => x.counts.admitted === 2,
    );
    expect(d.counts).toMatchObject({ entries: 6, waiting: 4, admitted: 2 });
    const places = (
      await tdb.db.query(`SELECT place, shuffle_key FROM drop_entries WHERE drop_id = $1 ORDER BY place`, [id])
    ).rows;
    expect(places.map((p) => p.place)).toEqual([1, 2, 3, 4, 5, 6]);
    expect(places.every((p) => typeof p.shuffle_key === 'number')).toBe(true);
    const entries = await Promise.all(early.map((e) => entry(e.entry.id)));
    const admitted = early.filter((_, i) => entries[i].state === 'ADMITTED').map((e, i) => ({ e, i }));
    expect(admitted).toHaveLength(2);
    const waiting = entries.filter((e) => e.state === 'WAITING');
    expect(waiting.map((e) => e.place).sort()).toEqual([1, 2, 3, 4]);
    // a later entry queues behind the early ones
    const late = await enter(id, 'late');
    expect(late.entry).toMatchObject({ state: 'WAITING', place: 5 });
    // an admitted customer orders once; a second order finds the entry used
    const custOf = (entryId: string) => `q${early.findIndex((e) => e.entry.id === entryId)}`;
    const first = custOf(admitted[0]!.e.entry.id);
    expect(await place(first, 'DR-Q')).toMatchObject({ order: { status: 'RESERVED' }, userErrors: [] });
    expect((await place(first, 'DR-Q')).userErrors).toEqual([{ code: 'DROP_NOT_ADMITTED', sku: 'DR-Q' }]);
    expect(await inventory('DR-Q')).toEqual({ available: 1, reserved: 1, sold: 0 });
    // the other admission lapses after claimSeconds and the next in line is admitted
    const second = admitted[1]!.e.entry.id;
    expect(
      (
        await until(
          () => entry(second),
          (x) => x.state === 'LAPSED',
        )
      ).state,
    ).toBe('LAPSED');
    const after = await until(
      () => drop(id),
      (x) => x.counts.lapsed >= 1 && x.counts.admitted === 1,
    );
    expect(after.counts).toMatchObject({ ordered: 1, admitted: 1 });
    expect((await place(custOf(second), 'DR-Q')).userErrors).toEqual([{ code: 'DROP_NOT_ADMITTED', sku: 'DR-Q' }]);
    expect(await auditLedger(tdb.db, { stocked: { 'DR-Q': 2 } })).toEqual([]);
    expect(await auditDrops(tdb.db)).toEqual([]);
  });
});

describe('dropEntryChanged and the outbox', () => {
  it('tells the entry of every state change over graphql-ws, each one an outbox event written with it', async () => {
    await createProduct('DR-S', 1);
    const made = await createDrop({
      sku: 'DR-S',
      mode: 'QUEUE',
      opensAt: inSeconds(2),
      closesAt: inSeconds(600),
      claimSeconds: 60,
    });
    const e = await enter(made.drop.id, 'sub1');
    const sub = await subscribe(
      srv.url,
      KEY.shop,
      `subscription($id: ID!) { dropEntryChanged(entryId: $id) { id state place admittedUntil } }`,
      { id: e.entry.id },
    );
    try {
      const admitted = await sub.waitFor((x: { state: string }) => x.state === 'ADMITTED', 15_000);
      expect(admitted).toMatchObject({ id: e.entry.id, state: 'ADMITTED' });
      expect(await place('sub1', 'DR-S')).toMatchObject({ order: { status: 'RESERVED' } });
      expect(await sub.waitFor((x: { state: string }) => x.state === 'ORDERED')).toMatchObject({ state: 'ORDERED' });
    } finally {
      await sub.close();
    }
    const { rows } = await tdb.db.query(
      `SELECT payload->>'state' AS state FROM outbox WHERE topic = 'drop_entry' AND aggregate_key = $1 ORDER BY id`,
      [e.entry.id],
    );
    // entered, placed by the shuffle, admitted, ordered
    expect(rows.map((r) => r.state)).toEqual(['WAITING', 'WAITING', 'ADMITTED', 'ORDERED']);
    // another client cannot listen to it
    const other = await subscribe(
      srv.url,
      KEY.admin,
      `subscription($id: ID!) { dropEntryChanged(entryId: $id) { id } }`,
      { id: e.entry.id },
    );
    expect(JSON.stringify(await other.error)).toContain('no such entry');
    await other.close();
  });
});

describe('entries on a public key', () => {
  it("are the buyer's: the address without a buyer token, and at most DROP_ENTRIES_PER_ADDRESS per address", async () => {
    await createProduct('DR-P', 5);
    const made = await createDrop({
      sku: 'DR-P',
      mode: 'QUEUE',
      opensAt: inSeconds(60),
      closesAt: inSeconds(600),
      claimSeconds: 60,
    });
    const id = made.drop.id;
    const enterWeb = (customerId: string, ip: string, buyerToken?: string) =>
      gql(
        `mutation($i: EnterDropInput!) { enterDrop(input: $i) { entry { id customerId } entryToken userErrors { code } } }`,
        { i: { dropId: id, customerId, idempotencyKey: `w-${customerId}-${ip}`, buyerToken } },
        KEY.web,
        ip,
      ).then((d) => d.enterDrop);
    // without a buyer token a browser's customerId is not its word: one entry per address, whatever it sends
    const first = await enterWeb('anyone-1', '203.0.113.5');
    expect(first.entry.customerId).toBe('ip:203.0.113.5');
    expect((await enterWeb('anyone-2', '203.0.113.5')).userErrors).toEqual([{ code: 'ALREADY_ENTERED' }]);
    // the shop's buyer tokens vouch for customers; still at most 3 entries per address (the default)
    const token = (customerId: string) =>
      gql(`mutation($i: CreateBuyerTokenInput!) { createBuyerToken(input: $i) { token } }`, { i: { customerId } }).then(
        (d) => d.createBuyerToken.token as string,
      );
    for (const c of ['v1', 'v2']) expect((await enterWeb(c, '203.0.113.5', await token(c))).userErrors).toEqual([]);
    expect((await enterWeb('v3', '203.0.113.5', await token('v3'))).userErrors).toEqual([{ code: 'ENTRY_LIMIT' }]);
    expect((await enterWeb('v3', '198.51.100.9', await token('v3'))).userErrors).toEqual([]);
    // an entry is read with its token only
    const read = (token?: string) =>
      gql(
        `query($id: ID!, $t: String) { dropEntry(id: $id, token: $t) { id } }`,
        { id: first.entry.id, t: token },
        KEY.web,
      );
    expect((await read()).dropEntry).toBeNull();
    expect((await read(first.entryToken)).dropEntry).toEqual({ id: first.entry.id });
  });
});
