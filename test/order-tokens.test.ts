// Key kinds (issue 9, item 2): a `public` key lives in browsers, so every browser shares its client. It may read the
// catalog, subscribe to availability and place orders; it sees an order only with the order's own token, returned
// once as PlaceOrderPayload.orderToken (only its hash is stored) and accepted by order, releaseReservation and
// orderStatusChanged. Server-side keys stay trusted. Through the real server: HTTP and graphql-ws.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawnServer, type ServerProcess } from '../kit/server.js';
import { createTestDatabase } from './support/db.js';
import { subscribe } from './support/ws.js';
import { sha256Hex } from '../common/hash.js';
import { persistedRequest } from '../kit/persisted.js';

const tdb = await createTestDatabase();
const KEY = {
  web: 'order_tokens_public_key_001',
  shop: 'order_tokens_storefront_key1',
  admin: 'order_tokens_admin_key_00001',
};
let srv: ServerProcess;
beforeAll(async () => {
  srv = await spawnServer({
    env: {
      DATABASE_URL: tdb.url,
      API_KEYS: `public:web:${KEY.web},storefront:shop:${KEY.shop},admin:ops:${KEY.admin}`,
      RELAY_POLL_MS: '100',
    },
  });
  await gql(
    `mutation { createProduct(input: { sku: "TOK-1", name: "Token thing", priceAmount: 500, currencyCode: "USD", initialStock: 10 }) { userErrors { code } } }`,
    {},
    KEY.admin,
  );
});
afterAll(async () => {
  await srv?.stop();
  await tdb.drop();
});

async function gql(query: string, variables: Record<string, unknown>, key: string) {
  const res = await fetch(srv.endpoint, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
    body: JSON.stringify({ query, variables }),
  });
  return { status: res.status, body: (await res.json()) as any };
}
const ORDER = `id status`;
const place = (idempotencyKey: string, key = KEY.web) =>
  gql(
    `mutation($i: PlaceOrderInput!) { placeOrder(input: $i) { replayed orderToken order { ${ORDER} } userErrors { code } } }`,
    { i: { idempotencyKey, customerId: 'browser-customer', lines: [{ sku: 'TOK-1', quantity: 1 }] } },
    key,
  ).then((r) => r.body.data.placeOrder);
const readOrder = (id: string, token: string | null, key = KEY.web) =>
  gql(`query($id: ID!, $token: String) { order(id: $id, token: $token) { ${ORDER} } }`, { id, token }, key).then(
    (r) => r.body.data.order,
  );
const release = (orderId: string, token: string | null, key = KEY.web) =>
  gql(
    `mutation($i: ReleaseReservationInput!) { releaseReservation(input: $i) { order { ${ORDER} } userErrors { code } } }`,
    { i: { orderId, token } },
    key,
  ).then((r) => r.body.data.releaseReservation);
const available = () =>
  gql(`{ product(sku: "TOK-1") { availability { available } } }`, {}, KEY.web).then(
    (r) => r.body.data.product.availability.available as number,
  );

describe('a public key', () => {
  it('reads the catalog and places orders; the token comes once, and only its hash is stored', async () => {
    expect(await available()).toBe(10);
    const first = await place('tok-once');
    expect(first.order.status).toBe('RESERVED');
    expect(first.orderToken).toMatch(/^ot_[A-Za-z0-9_-]{43}$/);
    const replay = await place('tok-once');
    expect(replay).toMatchObject({ replayed: true, orderToken: null, order: { id: first.order.id } });
    const { rows } = await tdb.db.query('SELECT token_hash FROM orders WHERE id = $1', [first.order.id]);
    expect(rows[0].token_hash).toBe(await sha256Hex(first.orderToken));
    const { rows: leaked } = await tdb.db.query(
      `SELECT count(*)::int AS n FROM orders WHERE row_to_json(orders)::text LIKE '%' || $1 || '%'`,
      [first.orderToken],
    );
    expect(leaked[0].n).toBe(0);
  });

  it('the database takes a token digest only as 64 lowercase hex digits (0033: the same rule without a regex)', async () => {
    const first = await place('tok-check');
    const set = (v: string | null) =>
      tdb.db.query('UPDATE orders SET token_hash = $2 WHERE id = $1', [first.order.id, v]);
    for (const bad of [
      'A'.repeat(64),
      'a'.repeat(63),
      'a'.repeat(65),
      `${'a'.repeat(63)}g`,
      `${'a'.repeat(62)}é`,
      ` ${'a'.repeat(63)}`,
      '',
    ]) {
      await expect(set(bad), bad).rejects.toMatchObject({ code: '23514', constraint: 'orders_token_hash_check' });
    }
    for (const good of ['0123456789abcdef'.repeat(4), null]) expect((await set(good)).rowCount).toBe(1);
  });

  it('sees an order only with its own token', async () => {
    const a = await place('tok-read-a');
    const b = await place('tok-read-b');
    expect(await readOrder(a.order.id, null)).toBeNull(); // the order id alone: another browser of the same key
    expect(await readOrder(a.order.id, b.orderToken)).toBeNull(); // another order's token
    expect(await readOrder(a.order.id, 'ot_guess')).toBeNull();
    expect(await readOrder(a.order.id, a.orderToken)).toEqual({ id: a.order.id, status: 'RESERVED' });
    // a storefront key stays trusted server-side: its own client's orders, no token needed (and a public order is not its)
    const s = await place('tok-read-shop', KEY.shop);
    expect(s.orderToken).toEqual(expect.any(String));
    expect(await readOrder(s.order.id, null, KEY.shop)).toEqual({ id: s.order.id, status: 'RESERVED' });
    expect(await readOrder(a.order.id, a.orderToken, KEY.shop)).toBeNull();
  });

  it('releases an order only with its token; without it nothing changes', async () => {
    const o = await place('tok-release');
    const before = await available();
    for (const token of [null, 'ot_wrong_token']) {
      const r = await release(o.order.id, token);
      expect(r).toEqual({ order: null, userErrors: [{ code: 'NOT_FOUND' }] });
    }
    expect(await available()).toBe(before);
    expect((await release(o.order.id, o.orderToken)).order).toEqual({ id: o.order.id, status: 'CANCELLED' });
    expect(await available()).toBe(before + 1);
  });

  it('pays for an order (payOrder) only with its token; without it nothing is authorized', async () => {
    const placed = await place('tok-pay');
    const pay = (token: string | null) =>
      gql(
        `mutation($i: PayOrderInput!) { payOrder(input: $i) { order { ${ORDER} payment { state } } userErrors { code } } }`,
        { i: { orderId: placed.order.id, token, payment: { provider: 'sandbox', token: 'tok_approve' } } },
        KEY.web,
      ).then((r) => r.body.data.payOrder);
    expect(await pay(null)).toEqual({ order: null, userErrors: [{ code: 'NOT_FOUND' }] });
    expect(await pay('ot_not_the_token')).toEqual({ order: null, userErrors: [{ code: 'NOT_FOUND' }] });
    expect(await readOrder(placed.order.id, placed.orderToken)).toEqual({ id: placed.order.id, status: 'RESERVED' });
    expect(await pay(placed.orderToken)).toEqual({
      order: { id: placed.order.id, status: 'CONFIRMED', payment: { state: 'AUTHORIZED' } },
      userErrors: [],
    });
  });

  it('may not run admin operations', async () => {
    const r = await gql(
      `mutation { restock(input: { sku: "TOK-1", quantity: 5 }) { userErrors { code } } }`,
      {},
      KEY.web,
    );
    expect(r.body.errors[0].extensions.code).toBe('FORBIDDEN');
  });

  it('subscribes to availability, and to an order only with its token (graphql-ws)', async () => {
    const avail = await subscribe(
      srv.url,
      KEY.web,
      `subscription { availabilityChanged(skus: ["TOK-1"]) { available } }`,
    );
    const o = await place('tok-watch');
    await avail.waitFor(() => true);
    const denied = await subscribe(
      srv.url,
      KEY.web,
      `subscription($id: ID!) { orderStatusChanged(orderId: $id) { id status } }`,
      { id: o.order.id },
    );
    expect(JSON.stringify(await denied.error)).toMatch(/NOT_FOUND|no such order/);
    const wrong = await subscribe(
      srv.url,
      KEY.web,
      `subscription($id: ID!, $t: String) { orderStatusChanged(orderId: $id, token: $t) { id status } }`,
      { id: o.order.id, t: 'ot_wrong' },
    );
    expect(JSON.stringify(await wrong.error)).toMatch(/NOT_FOUND|no such order/);
    const watch = await subscribe<{ id: string; status: string }>(
      srv.url,
      KEY.web,
      `subscription($id: ID!, $t: String) { orderStatusChanged(orderId: $id, token: $t) { id status } }`,
      {
        id: o.order.id,
        t: o.orderToken,
      },
    );
    await release(o.order.id, o.orderToken);
    expect((await watch.waitFor((e) => e.status === 'CANCELLED')).id).toBe(o.order.id);
    for (const s of [avail, denied, wrong, watch]) await s.close();
  });

  it('does the same through the shipped persisted operations (PlaceOrder returns the token, Order takes it)', async () => {
    const run = async (name: string, variables: Record<string, unknown>) => {
      const res = await fetch(persistedRequest(name, variables, KEY.web, undefined, srv.url));
      return ((await res.json()) as any).data;
    };
    const placed = (
      await run('PlaceOrder', {
        input: {
          idempotencyKey: 'tok-persisted',
          customerId: 'browser-customer',
          lines: [{ sku: 'TOK-1', quantity: 1 }],
        },
      })
    ).placeOrder;
    expect(placed.orderToken).toMatch(/^ot_/);
    expect((await run('Order', { id: placed.order.id })).order).toBeNull();
    expect((await run('Order', { id: placed.order.id, token: placed.orderToken })).order).toMatchObject({
      id: placed.order.id,
      status: 'RESERVED',
    });
    const released = (
      await run('ReleaseReservation', { input: { orderId: placed.order.id, token: placed.orderToken } })
    ).releaseReservation;
    expect(released.order.status).toBe('CANCELLED');
  });
});
