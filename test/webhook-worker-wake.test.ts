// The delivery worker after a commit (orders/webhook-delivery.ts): it sequences a write's events at once only while
// some endpoint is enabled, because only a delivery waits for them; with none, the next poll or a feed read does it.
// Its own database: the answer depends on what endpoints exist.
import { describe, expect, it } from 'vitest';
import { startTestApp, KEYS } from './support/app.js';
import { startWebhookDelivery } from '../orders/webhook-delivery.js';
import { checkWebhookHost, postWebhook } from '../node/webhook-http.js';

const t = await startTestApp({
  poolSize: 8,
  events: { production: false, allowPrivateUrls: true, checkHost: checkWebhookHost, secretOverlapHours: 1 },
});
// a poll that never comes within the test: a pass runs at start, and then only when woken
const settings = {
  retrySchedule: [1],
  timeoutMs: 2000,
  disableAfterHours: 100,
  concurrencyPerEndpoint: 4,
  allowPrivateUrls: true,
  pollMs: 600_000,
};
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const positionOf = async (orderId: string) =>
  (
    await t.db.query(
      `SELECT p.position FROM events e LEFT JOIN event_positions p ON p.n = e.n
        WHERE e.order_id = $1 ORDER BY e.sequence LIMIT 1`,
      [orderId],
    )
  ).rows[0]?.position as string | null | undefined;
const place = async (key: string) => {
  const { order } = await t.placeOrder({ idempotencyKey: key, customerId: key, lines: [{ sku: 'WW-1', quantity: 1 }] });
  return order!.id;
};
/**
 * Starts a worker and waits for its first pass (a poll, at start) to have run: an event written just before it is
 * positioned by that pass, which has asked whether an endpoint is enabled first.
 */
const started = async (sentinel: string) => {
  await t.db.query(
    `INSERT INTO events (id, type, sku, sequence, data) VALUES (new_event_id(), 'stock.changed', $1, 1, '{}')`,
    [sentinel],
  );
  const worker = startWebhookDelivery({ db: t.db, post: postWebhook, settings, onError: () => {} });
  for (let i = 0; i < 250; i++) {
    const { rows } = await t.db.query(`SELECT count(*)::int AS n FROM events_pending`);
    if (rows[0].n === 0) return worker;
    await sleep(20);
  }
  await worker.stop();
  throw new Error('the first pass did not position the events');
};

describe('webhook delivery worker, after a commit', () => {
  it('sequences at once only while an endpoint is enabled; with none the write waits for the next poll', async () => {
    await t.product('WW-1', 10);
    const quiet = await started('WW-SENTINEL-1');
    try {
      const first = await place('ww-1');
      quiet.afterCommit();
      await sleep(500);
      // no endpoint: nothing waits for this event, so no transaction was spent on it
      expect(await positionOf(first)).toBeNull();
    } finally {
      await quiet.stop();
    }

    const r = await t.gql(
      `mutation { createWebhookEndpoint(input: { url: "http://127.0.0.1:9/hook", eventTypes: [ORDER_RESERVED] }) { endpoint { id } userErrors { code } } }`,
      {},
      KEYS.admin,
    );
    expect(r.body.data.createWebhookEndpoint.userErrors).toEqual([]);
    const busy = await started('WW-SENTINEL-2');
    try {
      const second = await place('ww-2');
      busy.afterCommit();
      const deadline = Date.now() + 5000;
      while ((await positionOf(second)) == null && Date.now() < deadline) await sleep(20);
      // an endpoint waits: sequenced right after the commit, long before the next poll, with its delivery queued
      expect(await positionOf(second)).not.toBeNull();
      const { rows } = await t.db.query(
        `SELECT count(*)::int AS n FROM webhook_deliveries d JOIN events e ON e.id = d.event_id WHERE e.order_id = $1`,
        [second],
      );
      expect(rows[0].n).toBe(1);
    } finally {
      await busy.stop();
    }
  });

  it('drains a backlog larger than one sequencer step at once, not one step per poll', async () => {
    // 2,500 committed events waiting for a position, and a poll that never comes within the test
    await t.db.query(
      `INSERT INTO events (id, type, sku, sequence, data)
       SELECT new_event_id(), 'stock.changed', 'WW-BACKLOG-' || g, 1, '{}' FROM generate_series(1, 2500) g`,
    );
    const worker = startWebhookDelivery({ db: t.db, post: postWebhook, settings, onError: () => {} });
    try {
      const deadline = Date.now() + 10_000;
      const pending = async () => (await t.db.query(`SELECT count(*)::int AS n FROM events_pending`)).rows[0].n;
      while ((await pending()) > 0 && Date.now() < deadline) await sleep(20);
      expect(await pending()).toBe(0);
    } finally {
      await worker.stop();
    }
  });
});
