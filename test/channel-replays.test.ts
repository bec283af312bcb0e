// A marketplace webhook's effect comes from what is signed (I8, I11): the action and the event's identity are read from
// the signed body, never from headers the marketplace does not sign. Whoever saw one delivery (a log, a proxy, a staging
// copy) can resend it with other headers; it is a duplicate and changes nothing. Real HTTP, each channel kind.
import { describe, expect, it } from 'vitest';
import { startChannelsApp } from './support/channels.js';
import { signSandbox, signShopify } from '../channels/sign.js';
import { SANDBOX_SIGNATURE_HEADER } from '../channels/inbound.js';
import { auditLedger } from './support/ledger.js';

const t = await startChannelsApp();
const status = async (channel: string, externalOrderId: string) =>
  (
    await t.db.query(`SELECT status FROM orders WHERE channel_id = $1 AND external_order_id = $2`, [
      channel,
      externalOrderId,
    ])
  ).rows[0]?.status;
const shopifyHeaders = (body: string, secret: string, topic: string, eventId: string) => ({
  'x-shopify-topic': topic,
  'x-shopify-hmac-sha256': signShopify(body, secret),
  'x-shopify-event-id': eventId,
  'x-shopify-webhook-id': `wh-${eventId}`,
  'x-shopify-triggered-at': new Date().toISOString(),
});

describe('SHOPIFY: Shopify signs the body only', () => {
  it('a replayed orders/create body under the orders/cancelled topic and a new event id is a duplicate, not a cancellation', async () => {
    await t.product('RP-SHOP', 10);
    const secret = 'shpss_replay_secret_0123456789';
    await t.createChannel({
      id: 'rp-shop',
      kind: 'SHOPIFY',
      endpoint: 'http://127.0.0.1:9/admin/api/2025-10/graphql.json',
      webhookSecret: secret,
    });
    const order = (extra: string) =>
      `{"id":7001,"admin_graphql_api_id":"gid://shopify/Order/7001","currency":"USD","cancelled_at":${extra},"line_items":[{"id":1,"sku":"RP-SHOP","quantity":3}]}`;
    const created = order('null');
    expect(
      (await t.post('rp-shop', created, shopifyHeaders(created, secret, 'orders/create', 'ev-1'))).body.result,
    ).toBe('confirmed');
    expect(await t.inventory('RP-SHOP')).toEqual({ available: 7, reserved: 0, sold: 3 });
    for (const [topic, eventId] of [
      ['orders/cancelled', 'ev-forged-1'],
      ['orders/updated', 'ev-forged-2'],
      ['orders/create', 'ev-forged-3'],
    ]) {
      const replay = await t.post('rp-shop', created, shopifyHeaders(created, secret, topic!, eventId!));
      expect([replay.status, replay.body.result]).toEqual([200, 'duplicate']);
    }
    expect(await t.inventory('RP-SHOP')).toEqual({ available: 7, reserved: 0, sold: 3 });
    expect(await status('rp-shop', 'gid://shopify/Order/7001')).toBe('CONFIRMED');
    // a signed body that says the order is cancelled cancels it, whatever topic it came under, once
    const cancelled = order('"2026-11-30T02:00:00-05:00"');
    const cancel = await t.post('rp-shop', cancelled, shopifyHeaders(cancelled, secret, 'orders/updated', 'ev-2'));
    expect(cancel.body.result).toBe('cancelled');
    const again = await t.post('rp-shop', cancelled, shopifyHeaders(cancelled, secret, 'orders/cancelled', 'ev-3'));
    expect(again.body.result).toBe('duplicate');
    expect(await t.inventory('RP-SHOP')).toEqual({ available: 10, reserved: 0, sold: 0 });
    expect(await status('rp-shop', 'gid://shopify/Order/7001')).toBe('CANCELLED');
    expect(await auditLedger(t.db, { stocked: { 'RP-SHOP': 10 } })).toEqual([]);
  });

  it('a topic header that is not an order topic can only make a delivery ignored, and a body that is not an order is ignored', async () => {
    await t.product('RP-SHOP-2', 5);
    const secret = 'shpss_replay_secret_9876543210';
    await t.createChannel({
      id: 'rp-shop-2',
      kind: 'SHOPIFY',
      endpoint: 'http://127.0.0.1:9/admin/api/2025-10/graphql.json',
      webhookSecret: secret,
    });
    const product = `{"id":55,"admin_graphql_api_id":"gid://shopify/Product/55","title":"A product"}`;
    expect(
      (await t.post('rp-shop-2', product, shopifyHeaders(product, secret, 'orders/create', 'p-1'))).body.result,
    ).toBe('ignored');
    const created = `{"id":7002,"admin_graphql_api_id":"gid://shopify/Order/7002","cancelled_at":null,"line_items":[{"id":1,"sku":"RP-SHOP-2","quantity":1}]}`;
    expect(
      (await t.post('rp-shop-2', created, shopifyHeaders(created, secret, 'products/update', 'p-2'))).body.result,
    ).toBe('ignored');
    expect(await t.inventory('RP-SHOP-2')).toEqual({ available: 5, reserved: 0, sold: 0 });
    // the real delivery is then applied: ignoring recorded nothing
    expect(
      (await t.post('rp-shop-2', created, shopifyHeaders(created, secret, 'orders/create', 'p-3'))).body.result,
    ).toBe('confirmed');
    expect(await t.inventory('RP-SHOP-2')).toEqual({ available: 4, reserved: 0, sold: 1 });
  });
});

describe('SANDBOX: the event id and type are in the signed body', () => {
  it('a replayed order.created with Shopify-style topic and event headers added is a duplicate, not a cancellation', async () => {
    await t.product('RP-SBX', 10);
    const { webhookSecret } = await t.createChannel({ id: 'rp-sbx' });
    const body = JSON.stringify({
      eventId: 'sbx-1',
      type: 'order.created',
      externalOrderId: 'S-1',
      lines: [{ sku: 'RP-SBX', quantity: 3 }],
    });
    const signature = signSandbox(body, webhookSecret!);
    expect((await t.post('rp-sbx', body, { [SANDBOX_SIGNATURE_HEADER]: signature })).body.result).toBe('confirmed');
    const replay = await t.post('rp-sbx', body, {
      [SANDBOX_SIGNATURE_HEADER]: signature,
      'x-shopify-topic': 'orders/cancelled',
      'x-shopify-event-id': 'sbx-forged',
      'x-event-type': 'order.cancelled',
    });
    expect([replay.status, replay.body.result]).toEqual([200, 'duplicate']);
    // the same order under another signed event id is the same order
    expect(
      (
        await t.sandboxEvent('rp-sbx', webhookSecret!, {
          eventId: 'sbx-2',
          externalOrderId: 'S-1',
          lines: [{ sku: 'RP-SBX', quantity: 3 }],
        })
      ).body.result,
    ).toBe('duplicate_order');
    expect(await t.inventory('RP-SBX')).toEqual({ available: 7, reserved: 0, sold: 3 });
    expect(await status('rp-sbx', 'S-1')).toBe('CONFIRMED');
    expect(await auditLedger(t.db, { stocked: { 'RP-SBX': 10 } })).toEqual([]);
  });
});
