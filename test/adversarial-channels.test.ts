// An adversarial client of our own, marketplace side: an admin's cancellation racing the marketplace's own, and a
// signed delivery replayed at once under many headers, through real HTTP. Each ends with the ledger audit
// (test/support/ledger.ts).
import { describe, expect, it } from 'vitest';
import { startChannelsApp } from './support/channels.js';
import { KEYS } from './support/app.js';
import { signShopify } from '../channels/sign.js';
import { auditLedger } from './support/ledger.js';

const t = await startChannelsApp();
const stocked: Record<string, number> = {};
const product = async (sku: string, n: number) => {
  await t.product(sku, n);
  stocked[sku] = n;
};
const CANCEL = `mutation($i: CancelOrderInput!) { cancelOrder(input: $i) { order { status } userErrors { code } } }`;
const tally = (all: string[]) => all.reduce<Record<string, number>>((m, c) => ({ ...m, [c]: (m[c] ?? 0) + 1 }), {});

describe('attacks through the marketplace', () => {
  it("an admin's cancelOrder racing the marketplace's cancellation webhook: the units come back once", async () => {
    await product('ADV-C1', 20);
    const { webhookSecret } = await t.createChannel({ id: 'adv-c1' });
    for (let i = 0; i < 6; i++) {
      const externalOrderId = `race-${i}`;
      expect(
        (
          await t.sandboxEvent('adv-c1', webhookSecret!, {
            eventId: `c-${i}`,
            externalOrderId,
            lines: [{ sku: 'ADV-C1', quantity: 2 }],
          })
        ).body.result,
      ).toBe('confirmed');
      const { rows } = await t.db.query(
        `SELECT id FROM orders WHERE channel_id = 'adv-c1' AND external_order_id = $1`,
        [externalOrderId],
      );
      const [admin, hook] = await Promise.all([
        t.gql(CANCEL, { i: { orderId: rows[0].id } }, KEYS.admin),
        t.sandboxEvent('adv-c1', webhookSecret!, { eventId: `x-${i}`, type: 'order.cancelled', externalOrderId }),
      ]);
      expect(admin.body.data.cancelOrder.order.status).toBe('CANCELLED');
      expect(['cancelled', 'noop']).toContain(hook.body.result);
    }
    expect(await t.inventory('ADV-C1')).toEqual({ available: 20, reserved: 0, sold: 0 });
    expect(await auditLedger(t.db, { stocked })).toEqual([]);
  });

  it('one signed Shopify order replayed 20 times at once under other topics and event ids: one order, one sale', async () => {
    await product('ADV-C2', 10);
    const secret = 'shpss_adversarial_channels_0123';
    await t.createChannel({
      id: 'adv-c2',
      kind: 'SHOPIFY',
      endpoint: 'http://127.0.0.1:9/admin/api/2025-10/graphql.json',
      webhookSecret: secret,
    });
    const created = `{"id":9100,"admin_graphql_api_id":"gid://shopify/Order/9100","cancelled_at":null,"line_items":[{"id":1,"sku":"ADV-C2","quantity":4}]}`;
    const topics = ['orders/create', 'orders/cancelled', 'orders/updated', 'orders/paid'];
    const headers = (body: string, i: number) => ({
      'x-shopify-topic': topics[i % 4]!,
      'x-shopify-hmac-sha256': signShopify(body, secret),
      'x-shopify-event-id': `ev-${i}`,
    });
    const answers = await Promise.all(
      Array.from({ length: 20 }, (_, i) => t.post('adv-c2', created, headers(created, i))),
    );
    expect(tally(answers.map((a) => a.body.result!))).toEqual({ confirmed: 1, duplicate: 19 });
    expect(await t.inventory('ADV-C2')).toEqual({ available: 6, reserved: 0, sold: 4 });
    // the real cancellation, racing more replays of the creation: the units come back once and stay back
    const cancelled = created.replace('"cancelled_at":null', '"cancelled_at":"2026-11-30T02:00:00-05:00"');
    const mixed = await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        i % 2
          ? t.post('adv-c2', cancelled, headers(cancelled, i))
          : t.post('adv-c2', created, headers(created, 100 + i)),
      ),
    );
    expect(tally(mixed.map((a) => a.body.result!))).toEqual({ cancelled: 1, duplicate: 9 });
    expect(await t.inventory('ADV-C2')).toEqual({ available: 10, reserved: 0, sold: 0 });
    expect(await auditLedger(t.db, { stocked })).toEqual([]);
  });
});
