// examples/fulfillment ships each confirmed order exactly once (docs/events.md, "Writing an idempotent consumer"):
// the same event delivered 10 times at once; the consumer process killed between its commit and its answer; the
// consumer down while orders confirm, catching up from the retries and the feed with no gap.
import { serve, type ServerType } from '@hono/node-server';
import net from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import { KEYS, startTestApp } from './support/app.js';
import { createTestDatabase } from './support/db.js';
import { spawnServer } from '../kit/server.js';
import { signWebhook, startWebhookDelivery, webhookBody } from '../orders/webhook-delivery.js';
import { postWebhook } from '../node/webhook-http.js';
import { catchUpFromFeed, startFulfillment } from '../examples/fulfillment/consumer.js';

const t = await startTestApp({
  poolSize: 30,
  events: { production: false, allowPrivateUrls: true, secretOverlapHours: 1 },
});
const shop = await createTestDatabase({ max: 10 }); // the fulfillment service's own database
afterAll(() => shop.drop());
const server: ServerType = await new Promise((resolve) => {
  const s = serve({ fetch: t.app.fetch, port: 0, hostname: '127.0.0.1' }, () => resolve(s));
});
afterAll(async () => {
  (server as import('node:http').Server).closeAllConnections();
  await new Promise<void>((r) => server.close(() => r()));
});
const graphqlUrl = `http://127.0.0.1:${(server.address() as { port: number }).port}/graphql`;

async function gql(query: string, variables: Record<string, unknown>, key = KEYS.admin) {
  const r = await t.gql(query, variables, key);
  if (r.status !== 200 || r.body.errors) throw new Error(`fault: ${r.status} ${JSON.stringify(r.body)}`);
  return r.body.data;
}
async function endpoint(url: string) {
  const d = await gql(
    `mutation($input: CreateWebhookEndpointInput!) { createWebhookEndpoint(input: $input) { endpoint { id } secret userErrors { code message } } }`,
    { input: { url, eventTypes: ['ORDER_CONFIRMED'] } },
  );
  expect(d.createWebhookEndpoint.userErrors).toEqual([]);
  return d.createWebhookEndpoint as { endpoint: { id: string }; secret: string };
}
async function confirmedOrder(sku: string, key: string) {
  const placed = await t.placeOrder({ idempotencyKey: key, customerId: key, lines: [{ sku, quantity: 1 }] });
  const d = await gql(
    `mutation($input: ConfirmOrderInput!) { confirmOrder(input: $input) { order { id status } userErrors { code } } }`,
    { input: { orderId: placed.order!.id, paymentReference: `pay-${key}` } },
    KEYS.storefront,
  );
  expect(d.confirmOrder.order.status).toBe('CONFIRMED');
  return placed.order!.id;
}
const shipments = async (orderIds: string[]) =>
  (
    await shop.db.query(
      'SELECT order_id, count(*)::int AS n FROM fulfillment_shipments WHERE order_id = ANY ($1::uuid[]) GROUP BY order_id',
      [orderIds],
    )
  ).rows as { order_id: string; n: number }[];
const until = async (cond: () => Promise<boolean>, what: string) => {
  for (let i = 0; i < 1200; i++) {
    if (await cond()) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`timed out waiting for ${what}`);
};
const settings = {
  retrySchedule: [0.2, 0.4, 0.8, ...Array<number>(40).fill(1)],
  timeoutMs: 2000,
  disableAfterHours: 100,
  concurrencyPerEndpoint: 4,
  allowPrivateUrls: true,
  pollMs: 20,
};
await t.product('FUL', 100);

describe('examples/fulfillment', () => {
  it('ships once when the same event is delivered 10 times at once', async () => {
    const consumer = await startFulfillment({
      databaseUrl: shop.url,
      secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
      port: 0,
    });
    try {
      const orderId = await confirmedOrder('FUL', 'ful-10x');
      const { rows } = await t.db.query(
        `SELECT id, type, created_at, sequence, data FROM events WHERE order_id = $1 AND type = 'order.confirmed'`,
        [orderId],
      );
      const e = rows[0];
      const body = webhookBody({
        eventId: e.id,
        eventType: e.type,
        eventCreatedAt: e.created_at,
        sequence: Number(e.sequence),
        data: e.data,
      });
      const answers = await Promise.all(
        Array.from({ length: 10 }, () =>
          fetch(consumer.url, {
            method: 'POST',
            headers: signWebhook(e.id, body, ['whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw']),
            body,
          }).then(async (r) => [r.status, ((await r.json()) as { outcome: string }).outcome] as const),
        ),
      );
      expect(answers.every(([s]) => s === 200)).toBe(true);
      expect(answers.filter(([, o]) => o === 'shipped')).toHaveLength(1);
      expect(await shipments([orderId])).toEqual([{ order_id: orderId, n: 1 }]);
      // a forged one is refused and ships nothing
      const forged = await fetch(consumer.url, {
        method: 'POST',
        headers: signWebhook(e.id, body, ['whsec_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA']),
        body,
      });
      expect(forged.status).toBe(401);
    } finally {
      await consumer.stop();
    }
  });

  it('ships once when the consumer is killed between its commit and its answer, after the retry', async () => {
    const port = await new Promise<number>((resolve) => {
      const probe = net.createServer();
      probe.listen(0, '127.0.0.1', () => {
        const p = (probe.address() as net.AddressInfo).port;
        probe.close(() => resolve(p));
      });
    });
    const hook = await endpoint(`http://127.0.0.1:${port}/webhooks/lastunit`);
    const ready = /fulfillment listening on port (?<port>\d+)/;
    const env = { DATABASE_URL: shop.url, WEBHOOK_SECRET: hook.secret, PORT: String(port) };
    const dying = await spawnServer({
      script: 'examples/fulfillment/run.ts',
      env: { ...env, FULFILLMENT_CRASH_AFTER_COMMIT: '1' },
      ready,
    });
    const worker = startWebhookDelivery({ db: t.db, post: postWebhook, settings, onError: () => {} });
    try {
      const orderId = await confirmedOrder('FUL', 'ful-crash');
      await new Promise<void>((r) => dying.child.once('exit', () => r())); // killed itself after its commit
      expect(await shipments([orderId])).toEqual([{ order_id: orderId, n: 1 }]);
      const again = await spawnServer({ script: 'examples/fulfillment/run.ts', env, ready });
      try {
        const delivered = async () =>
          (
            await t.db.query(`SELECT status, attempt FROM webhook_deliveries WHERE endpoint_id = $1`, [
              hook.endpoint.id,
            ])
          ).rows[0];
        await until(async () => (await delivered())?.status === 'DELIVERED', 'the retry delivered');
        expect((await delivered()).attempt).toBeGreaterThanOrEqual(2);
        expect(await shipments([orderId])).toEqual([{ order_id: orderId, n: 1 }]);
      } finally {
        await again.stop();
      }
    } finally {
      await worker.stop();
      await dying.stop('SIGKILL');
      await gql(`mutation($id: ID!) { deleteWebhookEndpoint(input: { id: $id }) { deletedId } }`, {
        id: hook.endpoint.id,
      });
    }
  });

  it('catches up with no gap after being down (the retries and the feed), each order shipped once', async () => {
    const consumer1 = await startFulfillment({
      databaseUrl: shop.url,
      secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
      port: 0,
    });
    const port = consumer1.port;
    await consumer1.stop(); // down from here on
    const hook = await endpoint(`http://127.0.0.1:${port}/webhooks/lastunit`);
    const worker = startWebhookDelivery({ db: t.db, post: postWebhook, settings, onError: () => {} });
    try {
      const ids: string[] = [];
      for (let i = 0; i < 20; i++) ids.push(await confirmedOrder('FUL', `ful-down-${i}`));
      await until(
        async () =>
          Number(
            (
              await t.db.query(
                `SELECT count(*)::int AS n FROM webhook_deliveries WHERE endpoint_id = $1 AND attempt >= 2`,
                [hook.endpoint.id],
              )
            ).rows[0].n,
          ) === 20,
        'every delivery to have failed twice',
      );
      const consumer = await startFulfillment({ databaseUrl: shop.url, secret: hook.secret, port });
      try {
        // the feed first (from the beginning: it holds the earlier tests' orders too, which it must not ship again)
        await catchUpFromFeed(consumer.pool, graphqlUrl, KEYS.admin);
        await until(
          async () =>
            Number(
              (
                await t.db.query(
                  `SELECT count(*)::int AS n FROM webhook_deliveries WHERE endpoint_id = $1 AND status = 'DELIVERED'`,
                  [hook.endpoint.id],
                )
              ).rows[0].n,
            ) === 20,
          'the retries delivered',
        );
        const shipped = await shipments(ids);
        expect(shipped).toHaveLength(20);
        expect(shipped.every((s) => s.n === 1)).toBe(true);
        expect(Number((await shop.db.query('SELECT count(*)::int AS n FROM fulfillment_shipments')).rows[0].n)).toBe(
          22,
        );
      } finally {
        await consumer.stop();
      }
    } finally {
      await worker.stop();
    }
  });
});
