// Marketplace channels (docs/channels.md): the admin API and listed quantities (point 1), and inbound marketplace
// orders applied exactly once through POST /webhooks/channels/:channelId over real HTTP (point 2).
import http from 'node:http';
import { describe, expect, it } from 'vitest';
import { KEYS } from './support/app.js';
import { startChannelsApp } from './support/channels.js';
import { SANDBOX_SIGNATURE_HEADER } from '../channels/inbound.js';
import { signSandbox } from '../channels/sign.js';

const t = await startChannelsApp();
const ORDER = `status channel rejection { code sku } lines { sku quantity } total { amount currencyCode }`;
const channelOrder = async (channelId: string, externalOrderId: string) =>
  (
    await t.admin(`query($id: ID!, $x: String!) { channel(id: $id) { order(externalOrderId: $x) { ${ORDER} } } }`, {
      id: channelId,
      x: externalOrderId,
    })
  ).channel.order;
/** POSTs a chunked body (no Content-Length) and never ends it: only an answer before the end resolves this. */
function postOpenEnded(path: string, body: Buffer, headers: Record<string, string> = {}) {
  return new Promise<{ status: number; body: string }>((resolve, reject) => {
    const req = http.request(`${t.url}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'transfer-encoding': 'chunked', ...headers },
    });
    req.on('response', (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d) => (text += d));
      res.on('end', () => {
        req.destroy();
        resolve({ status: res.statusCode!, body: text });
      });
    });
    req.on('error', (err) => {
      if (!req.destroyed) reject(err);
    });
    for (let at = 0; at < body.length; at += 16_384) req.write(body.subarray(at, at + 16_384));
    req.flushHeaders();
  });
}
const processed = async (source: string) =>
  Number((await t.db.query(`SELECT count(*)::int AS n FROM processed_events WHERE source = $1`, [source])).rows[0].n);

describe('channels (admin)', () => {
  it('creates a channel, returns its webhook secret once, and lists each SKU by the formula', async () => {
    await t.product('CH-F', 10);
    const plain = await t.createChannel({ id: 'plain' });
    expect(plain.userErrors).toEqual([]);
    expect(plain.webhookSecret).toMatch(/^chsec_.{20,}/);
    expect(plain.channel).toMatchObject({
      id: 'plain',
      kind: 'SANDBOX',
      buffer: 0,
      maxListed: null,
      percent: 100,
      zeroAtOrBelow: 0,
      maxPushesPerSecond: 5,
    });
    const ruled = await t.createChannel({ id: 'ruled', buffer: 2, percent: 50, maxListed: 2, zeroAtOrBelow: 0 });
    const zeroed = await t.createChannel({ id: 'zeroed', zeroAtOrBelow: 10 });
    const buffered = await t.createChannel({ id: 'buffered', buffer: 2 });
    expect([ruled, zeroed, buffered].map((c) => c.userErrors)).toEqual([[], [], []]);
    // available 10: plain 10; ruled min(2, floor(10*50/100)-2 = 3) = 2; zeroed 0 (10 <= 10); buffered 8
    const desired = async () =>
      Promise.all(
        ['plain', 'ruled', 'zeroed', 'buffered'].map(async (c) => (await t.listings(c, ['CH-F']))[0]!.desiredQuantity),
      );
    expect(await desired()).toEqual([10, 2, 0, 8]);
    expect((await t.listings('plain', ['CH-F', 'NO-SUCH']))[1]).toBeNull();
    expect((await t.listings('plain', ['CH-F']))[0]).toMatchObject({
      pushedQuantity: null,
      pushedAt: null,
      pending: true,
    });

    // a storefront claim recomputes every channel's figure in its own transaction
    const placed = await t.placeOrder({ idempotencyKey: 'ch-f-1', lines: [{ sku: 'CH-F', quantity: 7 }] });
    expect(placed.order!.status).toBe('RESERVED');
    expect(await desired()).toEqual([3, 0, 0, 1]); // 3: ruled max(0, 1-2) = 0
    await t.release(placed.order!.id);
    expect(await desired()).toEqual([10, 2, 0, 8]);

    // the secret is never shown again: no Channel field carries it
    const r = await t.gql(`{ channel(id: "plain") { webhookSecret } }`, {}, KEYS.admin);
    expect(r.body.errors?.[0]?.message).toMatch(/webhookSecret/);
    const list = await t.admin(`{ channels { id } }`);
    expect(list.channels.map((c: { id: string }) => c.id)).toEqual(['buffered', 'plain', 'ruled', 'zeroed']);
  });

  it('updateChannel recomputes the listings in the same transaction; bad input writes nothing', async () => {
    await t.product('CH-U', 6);
    await t.createChannel({ id: 'upd' });
    expect((await t.listings('upd', ['CH-U']))[0]!.desiredQuantity).toBe(6);
    const d = await t.admin(
      `mutation($input: UpdateChannelInput!) { updateChannel(input: $input) { channel { buffer maxListed } userErrors { code field } } }`,
      { input: { id: 'upd', buffer: 1, maxListed: 4 } },
    );
    expect(d.updateChannel).toEqual({ channel: { buffer: 1, maxListed: 4 }, userErrors: [] });
    expect((await t.listings('upd', ['CH-U']))[0]!.desiredQuantity).toBe(4);
    const bad = await t.admin(
      `mutation($input: UpdateChannelInput!) { updateChannel(input: $input) { channel { id } userErrors { code field } } }`,
      { input: { id: 'upd', percent: 101 } },
    );
    expect(bad.updateChannel).toEqual({
      channel: null,
      userErrors: [{ code: 'INVALID_INPUT', field: ['input', 'percent'] }],
    });
    const missing = await t.admin(
      `mutation($input: UpdateChannelInput!) { updateChannel(input: $input) { channel { id } userErrors { code } } }`,
      { input: { id: 'nope', buffer: 1 } },
    );
    expect(missing.updateChannel.userErrors).toEqual([{ code: 'NOT_FOUND' }]);
    const dup = await t.createChannel({ id: 'upd' });
    expect(dup.userErrors[0]).toMatchObject({ code: 'INVALID_INPUT', field: ['input', 'id'] });
    expect(dup.webhookSecret).toBeNull();
    const badId = await t.createChannel({ id: 'Bad Id' });
    expect(badId.userErrors[0]).toMatchObject({ code: 'INVALID_INPUT', field: ['input', 'id'] });
    expect((await t.db.query(`SELECT count(*)::int AS n FROM channels WHERE id IN ('upd', 'Bad Id')`)).rows[0].n).toBe(
      1,
    );
  });

  it('updateChannel during a claim in flight lists what the claim left, not what was there before it', async () => {
    await t.product('CH-IF', 10);
    await t.createChannel({ id: 'inflight' });
    expect((await t.listings('inflight', ['CH-IF']))[0]!.desiredQuantity).toBe(10);
    // a claim of 5 holds the SKU's row (its trigger lists the old rules' figure: 5) while the rules change
    const claim = await t.db.pool.connect();
    try {
      await claim.query('BEGIN');
      await claim.query(`UPDATE inventory SET available = available - 5, reserved = reserved + 5 WHERE sku = 'CH-IF'`);
      const update = t.admin(`mutation { updateChannel(input: {id: "inflight", buffer: 1}) { userErrors { code } } }`);
      // the recompute waits for the claim's row lock
      let waited = false;
      for (let i = 0; i < 250 && !waited; i++) {
        const { rows } = await t.db.query(
          `SELECT count(*)::int AS n FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
            WHERE NOT l.granted AND a.query LIKE '%recompute_channel_listings%'`,
        );
        waited = rows[0].n > 0;
        if (!waited) await new Promise((r) => setTimeout(r, 20));
      }
      await claim.query('COMMIT');
      expect(waited).toBe(true);
      expect((await update).updateChannel.userErrors).toEqual([]);
    } finally {
      claim.release();
    }
    // 5 left, buffer 1: 4 listed (9, the figure of before the claim less the buffer, would overlist by 5)
    expect((await t.listings('inflight', ['CH-IF']))[0]!.desiredQuantity).toBe(4);
    await t.db.query(`UPDATE inventory SET available = available + 5, reserved = reserved - 5 WHERE sku = 'CH-IF'`);
  });

  it('follows the first stock change after a rule change (the recomputed version does not hide it)', async () => {
    await t.product('CH-RV', 10);
    await t.createChannel({ id: 'rv' });
    const desired = async () => (await t.listings('rv', ['CH-RV']))[0]!.desiredQuantity;
    expect(await desired()).toBe(10);
    const d = await t.admin(`mutation { updateChannel(input: {id: "rv", buffer: 2}) { userErrors { code } } }`);
    expect(d.updateChannel.userErrors).toEqual([]);
    expect(await desired()).toBe(8);
    // the next change of this SKU: 9 available, 7 listed (not the 8 of before the sale, which would overlist)
    expect(
      (await t.placeOrder({ idempotencyKey: 'ch-rv-1', lines: [{ sku: 'CH-RV', quantity: 1 }] })).order!.status,
    ).toBe('RESERVED');
    expect(await desired()).toBe(7);
    await t.restock('CH-RV', 3);
    expect(await desired()).toBe(10);
  });

  it('needs an admin key', async () => {
    const r = await t.gql(`{ channels { id } }`, {}, KEYS.storefront);
    expect(r.body.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
    const m = await t.gql(
      `mutation { createChannel(input: {id: "x", name: "x", kind: SANDBOX, endpoint: "http://x"}) { webhookSecret } }`,
      {},
      KEYS.storefront,
    );
    expect(m.body.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
  });
});

describe('marketplace orders (POST /webhooks/channels/:channelId)', () => {
  it('answers 404 for an unknown channel and 400 with no effect for a bad signature', async () => {
    await t.product('CH-SIG', 3);
    const { webhookSecret } = await t.createChannel({ id: 'sig' });
    expect(
      (
        await t.sandboxEvent('nosuch', webhookSecret!, {
          eventId: 'e1',
          externalOrderId: 'o1',
          lines: [{ sku: 'CH-SIG', quantity: 1 }],
        })
      ).status,
    ).toBe(404);
    const bad = await t.sandboxEvent('sig', 'chsec_not_the_secret_at_all', {
      eventId: 'e1',
      externalOrderId: 'o1',
      lines: [{ sku: 'CH-SIG', quantity: 1 }],
    });
    expect(bad.status).toBe(400);
    const unsigned = await t.post(
      'sig',
      JSON.stringify({
        eventId: 'e1',
        type: 'order.created',
        externalOrderId: 'o1',
        lines: [{ sku: 'CH-SIG', quantity: 1 }],
      }),
      {},
    );
    expect(unsigned.status).toBe(400);
    const unknownSku = await t.sandboxEvent('sig', webhookSecret!, {
      eventId: 'e2',
      externalOrderId: 'o2',
      lines: [{ sku: 'NOPE', quantity: 1 }],
    });
    expect(unknownSku.status).toBe(422);
    expect(await t.inventory('CH-SIG')).toEqual({ available: 3, reserved: 0, sold: 0 });
    expect(await processed('channel:sig')).toBe(0);
  });

  it('answers 422 to a signed event the database cannot store (a NUL character), with no effect', async () => {
    await t.product('CH-NUL', 3);
    const { webhookSecret } = await t.createChannel({ id: 'nul' });
    for (const e of [
      { eventId: 'e\u0000', externalOrderId: 'o1', lines: [{ sku: 'CH-NUL', quantity: 1 }] },
      { eventId: 'e2', externalOrderId: 'o\u0000', lines: [{ sku: 'CH-NUL', quantity: 1 }] },
    ]) {
      const r = await t.sandboxEvent('nul', webhookSecret!, e);
      expect([r.status, r.body.received, r.body.error]).toEqual([
        422,
        false,
        expect.stringMatching(/^invalid input: a text value contains a NUL character/),
      ]);
    }
    expect(await t.inventory('CH-NUL')).toEqual({ available: 3, reserved: 0, sold: 0 });
    expect(await processed('channel:nul')).toBe(0);
  });

  it('refuses a body over the limit with 413 while it streams', async () => {
    const { webhookSecret } = await t.createChannel({ id: 'big' });
    const lines = Array.from({ length: 20_000 }, (_, i) => ({ sku: `SKU-${i}`, quantity: 1 }));
    const body = JSON.stringify({ eventId: 'big-1', type: 'order.created', externalOrderId: 'big-1', lines });
    expect(Buffer.byteLength(body)).toBeGreaterThan(262_144);
    // chunked, no Content-Length, and never ended: only the streaming count can refuse it
    const r = await postOpenEnded(`/webhooks/channels/big`, Buffer.from(body), {
      [SANDBOX_SIGNATURE_HEADER]: signSandbox(body, webhookSecret!),
    });
    expect(r.status).toBe(413);
    expect(JSON.parse(r.body).errors[0].extensions.code).toBe('PAYLOAD_TOO_LARGE');
    expect(await processed('channel:big')).toBe(0);
  });

  it('changes stock once for ten concurrent deliveries of one event, and once for one order under two event ids', async () => {
    await t.product('CH-ONCE', 5);
    const { webhookSecret } = await t.createChannel({ id: 'once' });
    const e = { eventId: 'evt-1', externalOrderId: 'ord-1', lines: [{ sku: 'CH-ONCE', quantity: 2 }] };
    const answers = await Promise.all(Array.from({ length: 10 }, () => t.sandboxEvent('once', webhookSecret!, e)));
    expect(answers.map((a) => a.status)).toEqual(Array(10).fill(200));
    expect(answers.map((a) => a.body.result).sort()).toEqual(['confirmed', ...Array(9).fill('duplicate')]);
    expect(await t.inventory('CH-ONCE')).toEqual({ available: 3, reserved: 0, sold: 2 });
    // the same marketplace order again under other event ids (Shopify's second subscription, an eBay re-send), concurrently
    const again = await Promise.all(
      ['evt-2', 'evt-3'].map((id) => t.sandboxEvent('once', webhookSecret!, { ...e, eventId: id })),
    );
    expect(again.map((a) => [a.status, a.body.result])).toEqual([
      [200, 'duplicate_order'],
      [200, 'duplicate_order'],
    ]);
    expect(await t.inventory('CH-ONCE')).toEqual({ available: 3, reserved: 0, sold: 2 });
    expect(await channelOrder('once', 'ord-1')).toMatchObject({
      status: 'CONFIRMED',
      channel: 'once',
      lines: [{ sku: 'CH-ONCE', quantity: 2 }],
      total: { amount: 2000 },
    });
    expect((await t.db.query(`SELECT count(*)::int AS n FROM orders WHERE channel_id = 'once'`)).rows[0].n).toBe(1);
    // the listings followed the marketplace order in its transaction
    expect((await t.listings('once', ['CH-ONCE']))[0]!.desiredQuantity).toBe(3);
  });

  it('records a CHANNEL_OVERSOLD incident (stock never negative) and restocks a cancellation once', async () => {
    await t.product('CH-OVER', 2);
    const { webhookSecret } = await t.createChannel({ id: 'over' });
    const first = await t.sandboxEvent('over', webhookSecret!, {
      eventId: 'o-1',
      externalOrderId: 'A',
      lines: [{ sku: 'CH-OVER', quantity: 2 }],
    });
    const second = await t.sandboxEvent('over', webhookSecret!, {
      eventId: 'o-2',
      externalOrderId: 'B',
      lines: [{ sku: 'CH-OVER', quantity: 1 }],
    });
    expect([first.body.result, second.body.result]).toEqual(['confirmed', 'oversold']);
    expect(await t.inventory('CH-OVER')).toEqual({ available: 0, reserved: 0, sold: 2 });
    expect(await channelOrder('over', 'B')).toMatchObject({
      status: 'REJECTED',
      channel: 'over',
      rejection: { code: 'CHANNEL_OVERSOLD', sku: 'CH-OVER' },
    });
    const o = await t.admin(`{ channel(id: "over") { oversells { externalOrderId sku cancelRequested } } }`);
    expect(o.channel.oversells).toEqual([{ externalOrderId: 'B', sku: 'CH-OVER', cancelRequested: false }]);
    const { rows } = await t.db.query(
      `SELECT count(*)::int AS n FROM channel_incidents WHERE channel_id = 'over' AND cancel_state = 'PENDING'`,
    );
    expect(rows[0].n).toBe(1);
    // a repeated oversold event records nothing more
    expect(
      (
        await t.sandboxEvent('over', webhookSecret!, {
          eventId: 'o-2',
          externalOrderId: 'B',
          lines: [{ sku: 'CH-OVER', quantity: 1 }],
        })
      ).body.result,
    ).toBe('duplicate');

    // order.cancelled for A, delivered twice under two event ids, concurrently: the units come back once
    const cancels = await Promise.all(
      ['c-1', 'c-2'].map((id) =>
        t.sandboxEvent('over', webhookSecret!, { eventId: id, type: 'order.cancelled', externalOrderId: 'A' }),
      ),
    );
    expect(cancels.map((c) => c.body.result).sort()).toEqual(['cancelled', 'noop']);
    expect(await t.inventory('CH-OVER')).toEqual({ available: 2, reserved: 0, sold: 0 });
    expect(await channelOrder('over', 'A')).toMatchObject({ status: 'CANCELLED' });
    // cancelling the oversold order changes nothing
    expect(
      (await t.sandboxEvent('over', webhookSecret!, { eventId: 'c-3', type: 'order.cancelled', externalOrderId: 'B' }))
        .body.result,
    ).toBe('noop');
    expect(await t.inventory('CH-OVER')).toEqual({ available: 2, reserved: 0, sold: 0 });
  });

  it('a cancellation delivered before its order makes the late order a no-op', async () => {
    await t.product('CH-LATE', 3);
    const { webhookSecret } = await t.createChannel({ id: 'late' });
    expect(
      (await t.sandboxEvent('late', webhookSecret!, { eventId: 'l-2', type: 'order.cancelled', externalOrderId: 'L' }))
        .body.result,
    ).toBe('cancelled_before_created');
    expect(
      (
        await t.sandboxEvent('late', webhookSecret!, {
          eventId: 'l-1',
          externalOrderId: 'L',
          lines: [{ sku: 'CH-LATE', quantity: 1 }],
        })
      ).body.result,
    ).toBe('duplicate_order');
    expect(await t.inventory('CH-LATE')).toEqual({ available: 3, reserved: 0, sold: 0 });
  });

  it("reads Shopify's orders/create and orders/cancelled, deduplicated on the signed body", async () => {
    await t.product('CH-SHOP', 4);
    // Shopify signs with the app's client secret: the admin hands it over
    const appSecret = 'shpss_the_apps_client_secret_0001';
    const { webhookSecret } = await t.createChannel({
      id: 'shop',
      kind: 'SHOPIFY',
      endpoint: 'http://127.0.0.1:9/admin/api/2025-10/graphql.json',
      webhookSecret: appSecret,
    });
    expect(webhookSecret).toBe(appSecret);
    expect(
      (await t.createChannel({ id: 'shop-short', kind: 'SHOPIFY', endpoint: 'http://x', webhookSecret: 'short' }))
        .userErrors[0],
    ).toMatchObject({ code: 'INVALID_INPUT', field: ['input', 'webhookSecret'] });
    // a REST id beyond 2^53: the exact digits are kept (admin_graphql_api_id)
    const orderId = '9007199254740993123';
    const lines = [{ sku: 'CH-SHOP', quantity: 3 }];
    const created = await Promise.all(
      [1, 2, 3].map(() =>
        t.shopifyEvent('shop', webhookSecret!, { eventId: 'shev-1', topic: 'orders/create', orderId, lines }),
      ),
    );
    expect(created.map((c) => c.body.result).sort()).toEqual(['confirmed', 'duplicate', 'duplicate']);
    expect(await t.inventory('CH-SHOP')).toEqual({ available: 1, reserved: 0, sold: 3 });
    expect(await channelOrder('shop', `gid://shopify/Order/${orderId}`)).toMatchObject({
      status: 'CONFIRMED',
      channel: 'shop',
    });
    const forged = await t.shopifyEvent('shop', 'not-the-shop-secret', {
      eventId: 'shev-9',
      topic: 'orders/cancelled',
      orderId,
    });
    expect(forged.status).toBe(400);
    const cancelled = await t.shopifyEvent('shop', webhookSecret!, {
      eventId: 'shev-2',
      topic: 'orders/cancelled',
      orderId,
    });
    expect(cancelled.body.result).toBe('cancelled');
    expect(await t.inventory('CH-SHOP')).toEqual({ available: 4, reserved: 0, sold: 0 });
  });
});
