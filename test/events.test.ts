// The event log, the feed and webhooks (docs/events.md): events written in the changing transaction for each type, the
// feed in commit order while 200 orders race, endpoint CRUD with bad input writing nothing, and signed at-least-once
// delivery in order per order through a real HTTP endpoint (verified with the standardwebhooks package).
import http from 'node:http';
import { afterAll, describe, expect, it } from 'vitest';
import { Webhook } from 'standardwebhooks';
import { KEYS, startTestApp } from './support/app.js';
import { startWebhookDelivery } from '../orders/webhook-delivery.js';
import { checkWebhookHost, postWebhook } from '../node/webhook-http.js';
import { createEvents } from '../orders/events.js';
import { spawnServer } from '../kit/server.js';

const t = await startTestApp({
  poolSize: 30,
  events: { production: false, allowPrivateUrls: true, checkHost: checkWebhookHost, secretOverlapHours: 1 },
});

async function admin(query: string, variables: Record<string, unknown> = {}) {
  const r = await t.gql(query, variables, KEYS.admin);
  if (r.status !== 200 || r.body.errors) throw new Error(`fault: ${r.status} ${JSON.stringify(r.body)}`);
  return r.body.data;
}
type FeedEvent = {
  id: string;
  type: string;
  sequence: number;
  data: string;
  order: { id: string; status: string } | null;
};
async function feedPage(after: string | null, first = 100, types?: string[]) {
  const d = await admin(
    `query($after: String, $first: Int, $types: [EventType!]) { events(after: $after, first: $first, types: $types) {
       edges { cursor node { id type sequence data order { id status } } } pageInfo { hasNextPage endCursor } } }`,
    { after, first, types },
  );
  return d.events as {
    edges: { cursor: string; node: FeedEvent }[];
    pageInfo: { hasNextPage: boolean; endCursor: string | null };
  };
}
/** Reads the feed from `cursor` to its end; returns the events and the cursor to go on from. */
async function readAll(cursor: string | null) {
  const out: FeedEvent[] = [];
  for (;;) {
    const p = await feedPage(cursor);
    out.push(...p.edges.map((e) => e.node));
    if (p.pageInfo.endCursor) cursor = p.pageInfo.endCursor;
    if (!p.pageInfo.hasNextPage) return { events: out, cursor };
  }
}
const count = async (table: string) => Number((await t.db.query(`SELECT count(*)::int AS n FROM ${table}`)).rows[0].n);

describe('the event log', () => {
  it('writes one event per change, with the order document as the API answers it, per-order and per-SKU sequences', async () => {
    const start = (await readAll(null)).cursor;
    await t.product('EV-A', 2);
    const placed = await t.placeOrder({ idempotencyKey: 'ev-a-1', lines: [{ sku: 'EV-A', quantity: 2 }] });
    const refused = await t.placeOrder({ idempotencyKey: 'ev-a-2', lines: [{ sku: 'EV-A', quantity: 1 }] });
    await t.release(placed.order!.id);
    await admin(`mutation { restock(input: { sku: "EV-A", quantity: 3 }) { userErrors { code } } }`);
    await admin(`mutation { setStock(input: { sku: "EV-A", available: 10 }) { userErrors { code } } }`);
    const { events } = await readAll(start);
    const mine = events.filter((e) => e.order?.id === placed.order!.id);
    expect(mine.map((e) => [e.type, e.sequence, e.order!.status])).toEqual([
      ['ORDER_RESERVED', 1, 'RESERVED'],
      ['ORDER_RELEASED', 2, 'CANCELLED'],
    ]);
    // data is the order document (the shape db/order-document.ts reads)
    expect(JSON.parse(mine[0]!.data)).toMatchObject({
      id: placed.order!.id,
      status: 'RESERVED',
      lines: [{ sku: 'EV-A', quantity: 2 }],
    });
    // a refusal written RESERVED then REJECTED in one transaction is ONE event
    expect(events.filter((e) => e.order?.id === refused.order!.id).map((e) => [e.type, e.sequence])).toEqual([
      ['ORDER_REJECTED', 1],
    ]);
    const stock = events.filter((e) => e.type === 'STOCK_CHANGED').map((e) => JSON.parse(e.data));
    expect(stock.map((s) => s.available)).toEqual([5, 10]);
    const { rows } = await t.db.query(
      `SELECT e.sequence FROM events e JOIN event_positions p ON p.n = e.n WHERE e.sku = 'EV-A' AND e.order_id IS NULL ORDER BY p.position`,
    );
    expect(rows.map((r) => Number(r.sequence))).toEqual([1, 2]);
    // only that type
    const only = await feedPage(start, 100, ['STOCK_CHANGED']);
    expect(only.edges.every((e) => e.node.type === 'STOCK_CHANGED')).toBe(true);
  });

  it('a reader of the feed while 200 orders race sees every event exactly once, in commit order', async () => {
    await t.product('EV-RACE', 120);
    let cursor = (await readAll(null)).cursor;
    const before = await count('events');
    const seen: FeedEvent[] = [];
    let racing = true;
    const reader = (async () => {
      while (racing) {
        const r = await readAll(cursor);
        seen.push(...r.events);
        cursor = r.cursor;
      }
    })();
    const orders = await Promise.all(
      Array.from({ length: 200 }, (_, i) =>
        t.placeOrder({
          idempotencyKey: `race-${i}`,
          customerId: `race-${i}`,
          lines: [{ sku: 'EV-RACE', quantity: 1 }],
        }),
      ),
    );
    // half of the held ones released, racing too: a second event per order
    await Promise.all(
      orders
        .filter((o) => o.order?.status === 'RESERVED')
        .slice(0, 60)
        .map((o) => t.release(o.order!.id)),
    );
    racing = false;
    await reader;
    seen.push(...(await readAll(cursor)).events);
    const written = (await count('events')) - before;
    expect(orders.filter((o) => o.order?.status === 'RESERVED')).toHaveLength(120);
    expect(written).toBe(200 + 60);
    expect(seen).toHaveLength(written);
    expect(new Set(seen.map((e) => e.id)).size).toBe(written);
    // the feed's order is the commit order: per order, its events come in sequence order
    const last = new Map<string, number>();
    for (const e of seen) {
      const prev = last.get(e.order!.id) ?? 0;
      expect(e.sequence).toBe(prev + 1);
      last.set(e.order!.id, e.sequence);
    }
  });

  it('gives an event its position without writing the event row again: the row its transaction wrote stays', async () => {
    await t.product('EV-POS', 2);
    const { order } = await t.placeOrder({ idempotencyKey: 'ev-pos-1', lines: [{ sku: 'EV-POS', quantity: 1 }] });
    const row = async () =>
      (
        await t.db.query(
          `SELECT e.xmin::text AS xmin, e.ctid::text AS ctid, p.position, (q.n IS NOT NULL) AS pending
             FROM events e LEFT JOIN event_positions p ON p.n = e.n LEFT JOIN events_pending q ON q.n = e.n
            WHERE e.order_id = $1`,
          [order!.id],
        )
      ).rows[0];
    const before = await row();
    expect(before).toMatchObject({ position: null, pending: true });
    await readAll(null); // a feed read runs the sequencer first
    const after = await row();
    expect(after.position).not.toBeNull();
    expect(after.pending).toBe(false);
    // the same tuple, written by the same transaction: no UPDATE rewrote it (and every index of events) to place it
    expect([after.xmin, after.ctid]).toEqual([before.xmin, before.ctid]);
  });

  it("a partner key reads only its own client's orders' events", async () => {
    const events = createEvents({ db: t.db, production: false, allowPrivateUrls: true, secretOverlapHours: 1 });
    const all = await events.feed({ clientId: 'nobody', role: 'admin' }, { first: 500 });
    const own = await events.feed({ clientId: 'nobody', role: 'partner' }, { first: 500 });
    expect(all.ok && all.value.edges.length).toBeGreaterThan(0);
    expect(own.ok && own.value.edges.length).toBe(0);
  });

  it('refuses a cursor it did not give out', async () => {
    const r = await t.gql(`{ events(after: "bm9wZQ") { edges { cursor } } }`, {}, KEYS.admin);
    expect(r.status).toBe(400);
  });
});

const ENDPOINT = `endpoint { id url eventTypes enabled description } secret userErrors { code field message }`;
const createEndpoint = async (input: Record<string, unknown>) =>
  (
    await admin(
      `mutation($input: CreateWebhookEndpointInput!) { createWebhookEndpoint(input: $input) { ${ENDPOINT} } }`,
      { input },
    )
  ).createWebhookEndpoint;

describe('webhook endpoints', () => {
  it('refuse bad input with a userError and write nothing', async () => {
    const before = await count('webhook_endpoints');
    expect((await createEndpoint({ url: 'not a url', eventTypes: ['ORDER_CONFIRMED'] })).userErrors).toEqual([
      { code: 'INVALID_INPUT', field: ['input', 'url'], message: 'url is not a URL' },
    ]);
    expect(
      (await createEndpoint({ url: 'ftp://x.example/', eventTypes: ['ORDER_CONFIRMED'] })).userErrors[0].code,
    ).toBe('INVALID_INPUT');
    expect((await createEndpoint({ url: 'https://x.example/', eventTypes: [] })).userErrors[0].field).toEqual([
      'input',
      'eventTypes',
    ]);
    const unknownType = await t.gql(
      `mutation { createWebhookEndpoint(input: { url: "https://x.example/", eventTypes: [ORDER_SHIPPED] }) { secret } }`,
      {},
      KEYS.admin,
    );
    expect(unknownType.status).toBe(400);
    // production rules: https only, no private address (DNS resolved)
    const prod = createEvents({
      db: t.db,
      production: true,
      allowPrivateUrls: false,
      checkHost: checkWebhookHost,
      secretOverlapHours: 1,
    });
    const http1 = await prod.createEndpoint({ url: 'http://example.com/hook', eventTypes: ['order.confirmed'] });
    expect(!http1.ok && http1.errors[0]!.message).toBe('url must be https:// in production');
    for (const url of [
      'https://127.0.0.1/h',
      'https://localhost/h',
      'https://10.1.2.3/h',
      'https://[::1]/h',
      'https://169.254.169.254/latest',
    ]) {
      const r = await prod.createEndpoint({ url, eventTypes: ['order.confirmed'] });
      expect(!r.ok && r.errors[0]!.message, url).toMatch(/loopback, private or link-local/);
    }
    const unknown = await prod.createEndpoint({ url: 'https://example.com/h', eventTypes: ['order.shipped'] });
    expect(!unknown.ok && unknown.errors[0]!.message).toBe('unknown event type order.shipped');
    expect(await count('webhook_endpoints')).toBe(before);
    const redeliver = await admin(
      `mutation($e: ID!) { redeliverEvent(input: { endpointId: $e, eventId: "evt_00000000000000000000000000000000" }) { delivery { eventId } userErrors { code field } } }`,
      { e: '00000000-0000-4000-8000-000000000000' },
    );
    expect(redeliver.redeliverEvent.userErrors).toEqual([{ code: 'NOT_FOUND', field: ['input', 'endpointId'] }]);
    expect(await count('webhook_deliveries')).toBe(0);
  });

  it('create answers the secret once; update, rotate and delete', async () => {
    const c = await createEndpoint({ url: 'http://127.0.0.1:9/h', eventTypes: ['ORDER_CONFIRMED'], description: 'wh' });
    expect(c.userErrors).toEqual([]);
    expect(c.secret).toMatch(/^whsec_[A-Za-z0-9+/=]{32}$/);
    const list = await admin(`{ webhookEndpoints { id url eventTypes enabled } }`);
    expect(list.webhookEndpoints).toContainEqual({
      id: c.endpoint.id,
      url: 'http://127.0.0.1:9/h',
      eventTypes: ['ORDER_CONFIRMED'],
      enabled: true,
    });
    const u = await admin(
      `mutation($id: ID!) { updateWebhookEndpoint(input: { id: $id, eventTypes: [ORDER_CONFIRMED, ORDER_CANCELLED], enabled: false }) { endpoint { eventTypes enabled } userErrors { code } } }`,
      { id: c.endpoint.id },
    );
    expect(u.updateWebhookEndpoint).toEqual({
      endpoint: { eventTypes: ['ORDER_CONFIRMED', 'ORDER_CANCELLED'], enabled: false },
      userErrors: [],
    });
    const r = await admin(
      `mutation($id: ID!) { rotateWebhookEndpointSecret(input: { id: $id }) { secret endpoint { id } userErrors { code } } }`,
      { id: c.endpoint.id },
    );
    expect(r.rotateWebhookEndpointSecret.secret).toMatch(/^whsec_/);
    expect(r.rotateWebhookEndpointSecret.secret).not.toBe(c.secret);
    const d = await admin(
      `mutation($id: ID!) { deleteWebhookEndpoint(input: { id: $id }) { deletedId userErrors { code } } }`,
      { id: c.endpoint.id },
    );
    expect(d.deleteWebhookEndpoint).toEqual({ deletedId: c.endpoint.id, userErrors: [] });
    expect(
      (await admin(`query($id: ID!) { webhookEndpoint(id: $id) { id } }`, { id: c.endpoint.id })).webhookEndpoint,
    ).toBeNull();
  });
});

/** A real HTTP endpoint on 127.0.0.1 that verifies each delivery with standardwebhooks and answers by `answer`. */
async function receiver(answer: (n: number, body: any) => number) {
  const got: { headers: http.IncomingHttpHeaders; body: any; raw: string }[] = [];
  let n = 0;
  const server = http.createServer((req, res) => {
    let raw = '';
    req.on('data', (c) => (raw += c));
    req.on('end', () => {
      const body = JSON.parse(raw);
      got.push({ headers: req.headers, body, raw });
      res.statusCode = answer(++n, body);
      res.end('ok');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  afterAll(() => new Promise<void>((r) => server.close(() => r())));
  return { url: `http://127.0.0.1:${(server.address() as { port: number }).port}/hook`, got };
}
const until = async (cond: () => boolean | Promise<boolean>, what: string) => {
  for (let i = 0; i < 600; i++) {
    if (await cond()) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`timed out waiting for ${what}`);
};
const settings = {
  retrySchedule: [0.05, 0.1, 0.2],
  timeoutMs: 2000,
  disableAfterHours: 100,
  concurrencyPerEndpoint: 4,
  allowPrivateUrls: true,
  pollMs: 20,
};

describe('webhook delivery', () => {
  it('signs to Standard Webhooks, retries a failure with the same webhook-id, and keeps each order in sequence', async () => {
    // every first delivery of an event fails (500), the retry succeeds
    const failedOnce = new Set<string>();
    const r = await receiver((_n, body) => {
      if (failedOnce.has(body.id)) return 204;
      failedOnce.add(body.id);
      return 500;
    });
    const c = await createEndpoint({ url: r.url, eventTypes: ['ORDER_RESERVED', 'ORDER_RELEASED'] });
    const worker = startWebhookDelivery({ db: t.db, post: postWebhook, settings, onError: (e) => console.error(e) });
    try {
      await t.product('EV-WH', 10);
      const placed = await Promise.all(
        Array.from({ length: 8 }, (_, i) =>
          t.placeOrder({ idempotencyKey: `wh-${i}`, customerId: `wh-${i}`, lines: [{ sku: 'EV-WH', quantity: 1 }] }),
        ),
      );
      await Promise.all(placed.map((p) => t.release(p.order!.id)));
      await until(() => r.got.filter((g) => failedOnce.has(g.body.id)).length >= 32, 'every event delivered twice');
      const wh = new Webhook(c.secret);
      for (const g of r.got) {
        expect(wh.verify(g.raw, g.headers as Record<string, string>)).toMatchObject({ id: g.body.id });
        expect(g.headers['webhook-id']).toBe(g.body.id);
      }
      // per order: reserved (twice: failed, then delivered) strictly before released
      for (const p of placed) {
        const types = r.got.filter((g) => g.body.data.id === p.order!.id).map((g) => g.body.type);
        expect(types).toEqual(['order.reserved', 'order.reserved', 'order.released', 'order.released']);
      }
      const deliveries = async () =>
        (
          await admin(
            `query($id: ID!) { webhookEndpoint(id: $id) { deliveries(first: 16) { edges { node { eventId attempt status httpStatus durationMs nextAttemptAt } } } } }`,
            { id: c.endpoint.id },
          )
        ).webhookEndpoint.deliveries.edges.map((e: any) => e.node);
      // the receiver has answered the last retry; the worker records it once that answer reaches it
      await until(
        async () => (await deliveries()).filter((n: any) => n.status === 'DELIVERED').length === 16,
        'every delivery recorded',
      );
      const nodes = await deliveries();
      expect(nodes).toHaveLength(16);
      expect(nodes.every((n: any) => n.status === 'DELIVERED' && n.attempt === 2 && n.httpStatus === 204)).toBe(true);
      // a redelivery: the same webhook-id again
      const redo = await admin(
        `mutation($e: ID!, $v: ID!) { redeliverEvent(input: { endpointId: $e, eventId: $v }) { delivery { eventId status } userErrors { code } } }`,
        { e: c.endpoint.id, v: nodes[0].eventId },
      );
      expect(redo.redeliverEvent.userErrors).toEqual([]);
      await until(() => r.got.filter((g) => g.body.id === nodes[0].eventId).length === 3, 'the redelivery');
      // rotation: both secrets sign during the overlap
      const rot = await admin(`mutation($id: ID!) { rotateWebhookEndpointSecret(input: { id: $id }) { secret } }`, {
        id: c.endpoint.id,
      });
      const redo2 = await admin(
        `mutation($e: ID!, $v: ID!) { redeliverEvent(input: { endpointId: $e, eventId: $v }) { userErrors { code } } }`,
        { e: c.endpoint.id, v: nodes[0].eventId },
      );
      expect(redo2.redeliverEvent.userErrors).toEqual([]);
      await until(() => r.got.filter((g) => g.body.id === nodes[0].eventId).length === 4, 'the second redelivery');
      const lastGot = r.got.filter((g) => g.body.id === nodes[0].eventId).at(-1)!;
      expect(String(lastGot.headers['webhook-signature']).split(' ')).toHaveLength(2);
      expect(
        new Webhook(rot.rotateWebhookEndpointSecret.secret).verify(
          lastGot.raw,
          lastGot.headers as Record<string, string>,
        ),
      ).toBeTruthy();
      expect(wh.verify(lastGot.raw, lastGot.headers as Record<string, string>)).toBeTruthy();
    } finally {
      await worker.stop();
      await admin(`mutation($id: ID!) { deleteWebhookEndpoint(input: { id: $id }) { deletedId } }`, {
        id: c.endpoint.id,
      });
    }
  });

  it('marks a delivery FAILED after the schedule, and refuses a private address at delivery time when not allowed', async () => {
    const r = await receiver(() => 503);
    const c = await createEndpoint({ url: r.url, eventTypes: ['STOCK_CHANGED'] });
    const worker = startWebhookDelivery({ db: t.db, post: postWebhook, settings, onError: (e) => console.error(e) });
    const strict = startWebhookDelivery({
      db: t.db,
      post: (a) => postWebhook({ ...a, allowPrivate: false }),
      settings: { ...settings, retrySchedule: [] },
      onError: (e) => console.error(e),
    });
    try {
      await admin(`mutation { restock(input: { sku: "EV-WH", quantity: 1 }) { userErrors { code } } }`);
      const status = async () =>
        (
          await t.db.query(`SELECT status, attempt, last_error FROM webhook_deliveries WHERE endpoint_id = $1`, [
            c.endpoint.id,
          ])
        ).rows[0];
      await until(async () => (await status())?.status === 'FAILED', 'FAILED');
      const s = await status();
      // either worker may have made the last attempt: an answered 503, or a refusal before connecting
      expect(s.last_error).toMatch(/answered 503|loopback, private or link-local/);
    } finally {
      await worker.stop();
      await strict.stop();
    }
  });
});

describe('webhook delivery survives', () => {
  it('a worker SIGKILLed mid-delivery: the lease runs out and another worker sends it again, same webhook-id', async () => {
    let hung: http.ServerResponse | undefined;
    const got: string[] = [];
    const server = http.createServer((req, res) => {
      let raw = '';
      req.on('data', (c) => (raw += c));
      req.on('end', () => {
        got.push(String(req.headers['webhook-id']));
        if (got.length === 1)
          hung = res; // the first attempt is never answered
        else res.writeHead(204).end();
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(server.address() as { port: number }).port}/hook`;
    const c = await createEndpoint({ url, eventTypes: ['STOCK_CHANGED'] });
    const worker = await spawnServer({
      script: 'node/webhooks-cli.ts',
      env: {
        DATABASE_URL: t.dbUrl,
        WEBHOOK_TIMEOUT_MS: '1000',
        WEBHOOK_ALLOW_PRIVATE_URLS: 'true',
        WEBHOOK_POLL_MS: '20',
      },
      ready: /lastunit webhook worker running/,
    });
    let second: ReturnType<typeof startWebhookDelivery> | undefined;
    try {
      await admin(`mutation { restock(input: { sku: "EV-WH", quantity: 1 }) { userErrors { code } } }`);
      await until(() => got.length === 1, 'the first attempt');
      await worker.stop('SIGKILL', 0);
      second = startWebhookDelivery({
        db: t.db,
        post: postWebhook,
        settings: { ...settings, timeoutMs: 1000 },
        onError: (e) => console.error(e),
      });
      const row = async () =>
        (await t.db.query(`SELECT status, attempt FROM webhook_deliveries WHERE endpoint_id = $1`, [c.endpoint.id]))
          .rows[0];
      await until(async () => (await row())?.status === 'DELIVERED', 'the delivery after the lease ran out');
      expect(await row()).toEqual({ status: 'DELIVERED', attempt: 2 });
      expect(got).toHaveLength(2);
      expect(got[1]).toBe(got[0]);
    } finally {
      hung?.destroy();
      await second?.stop();
      await worker.stop('SIGKILL', 0);
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
      await admin(`mutation($id: ID!) { deleteWebhookEndpoint(input: { id: $id }) { deletedId } }`, {
        id: c.endpoint.id,
      });
    }
  });

  it('an endpoint failing for WEBHOOK_DISABLE_AFTER_HOURS is disabled, with a webhook_endpoint.disabled event', async () => {
    const r = await receiver(() => 500);
    const c = await createEndpoint({ url: r.url, eventTypes: ['STOCK_CHANGED'] });
    const worker = startWebhookDelivery({
      db: t.db,
      post: postWebhook,
      settings: { ...settings, retrySchedule: Array(40).fill(0.05), disableAfterHours: 0.5 / 3600 },
      onError: (e) => console.error(e),
    });
    try {
      await admin(`mutation { restock(input: { sku: "EV-WH", quantity: 1 }) { userErrors { code } } }`);
      const endpoint = async () =>
        (await admin(`query($id: ID!) { webhookEndpoint(id: $id) { enabled disabledAt } }`, { id: c.endpoint.id }))
          .webhookEndpoint;
      await until(async () => (await endpoint()).enabled === false, 'the endpoint disabled');
      // the feed shows an event once the sequencer gave it a position, a step after the commit that disabled it
      const disabledIds = async () =>
        (await feedPage(null, 100, ['WEBHOOK_ENDPOINT_DISABLED'])).edges.map((e) => JSON.parse(e.node.data).endpointId);
      await expect.poll(disabledIds, { timeout: 10_000 }).toContain(c.endpoint.id);
    } finally {
      await worker.stop();
    }
  });
});
