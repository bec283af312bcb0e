// An admin's cancelOrder of a marketplace order puts its units back AND asks the marketplace to cancel it, once,
// through the same outbox as an oversell's cancellation (channel_incidents, sent by the pusher outside any
// transaction). Real HTTP, the marketplace sandbox, two pushers at once.
import { afterAll, describe, expect, it } from 'vitest';
import { startChannelsApp } from './support/channels.js';
import { KEYS } from './support/app.js';
import { createChannelPusher } from '../orders/channel-pusher.js';
import { marketplaceClient } from '../channels/marketplace-client.js';
import { startMarketplaceSandbox } from '../channels/sandbox-marketplace.js';
import { auditLedger } from './support/ledger.js';

const t = await startChannelsApp();
const m = await startMarketplaceSandbox({ maxRequestsPerSecond: 0 });
afterAll(() => m.close());
const pusher = () =>
  createChannelPusher({
    db: t.db,
    metrics: t.metrics,
    channelListMs: 0,
    random: () => 0.5,
    clientFor: (c) => marketplaceClient(c, { timeoutMs: 2000 }),
  });
const CANCEL = `mutation($i: CancelOrderInput!) { cancelOrder(input: $i) { order { id status channel } userErrors { code } } }`;

describe('cancelOrder of a marketplace order', () => {
  it('restocks once and asks the marketplace to cancel, once, however many admins and pushers race', async () => {
    await t.product('MC-A', 5);
    const { webhookSecret } = await t.createChannel({ id: 'mc', endpoint: m.url, maxPushesPerSecond: 100 });
    m.configure({ webhookUrl: `${t.url}/webhooks/channels/mc`, webhookSecret: webhookSecret! });
    await pusher().pushOnce();
    const external = m.buy('MC-A', 2)!;
    await m.idle();
    expect(await t.inventory('MC-A')).toEqual({ available: 3, reserved: 0, sold: 2 });
    const { rows } = await t.db.query(`SELECT id FROM orders WHERE channel_id = 'mc' AND external_order_id = $1`, [
      external,
    ]);
    const orderId = rows[0].id as string;

    const answers = await Promise.all(
      [1, 2, 3].map(() => t.gql(CANCEL, { i: { orderId, reason: 'out of stock at the warehouse' } }, KEYS.admin)),
    );
    for (const a of answers)
      expect(a.body.data.cancelOrder).toMatchObject({ userErrors: [], order: { status: 'CANCELLED', channel: 'mc' } });
    expect(await t.inventory('MC-A')).toEqual({ available: 5, reserved: 0, sold: 0 });
    const incidents = await t.db.query(
      `SELECT kind, external_order_id, cancel_state FROM channel_incidents WHERE channel_id = 'mc'`,
    );
    expect(incidents.rows).toEqual([{ kind: 'ADMIN_CANCELLED', external_order_id: external, cancel_state: 'PENDING' }]);
    // an admin cancellation is not an oversell
    expect((await t.admin(`{ channel(id: "mc") { oversells { externalOrderId } } }`)).channel.oversells).toEqual([]);

    const sent = await Promise.all([pusher().cancelOnce(), pusher().cancelOnce()]);
    expect(sent[0]! + sent[1]!).toBe(1);
    expect(await pusher().cancelOnce()).toBe(0);
    expect(m.cancelRequests()).toEqual([external]);
    expect(m.stats().cancelRequests).toBe(1);
    expect((await t.db.query(`SELECT cancel_state FROM channel_incidents WHERE channel_id = 'mc'`)).rows).toEqual([
      { cancel_state: 'DONE' },
    ]);
    // the marketplace's own cancellation webhook, if it sends one, changes nothing more
    expect(
      (
        await t.sandboxEvent('mc', webhookSecret!, {
          eventId: 'mc-c-1',
          type: 'order.cancelled',
          externalOrderId: external,
        })
      ).body.result,
    ).toBe('noop');
    expect(await auditLedger(t.db, { stocked: { 'MC-A': 5 } })).toEqual([]);
  });

  it('a storefront order cancelled by an admin asks no marketplace anything', async () => {
    await t.product('MC-B', 2);
    const { rows: before } = await t.db.query(`SELECT count(*)::int AS n FROM channel_incidents`);
    const placed = await t.placeOrder({
      idempotencyKey: 'mc-b-1',
      customerId: 'mc-c',
      lines: [{ sku: 'MC-B', quantity: 1 }],
    });
    const confirmed = await t.gql(
      `mutation($i: ConfirmOrderInput!) { confirmOrder(input: $i) { order { status } userErrors { code } } }`,
      { i: { orderId: placed.order!.id, paymentReference: 'ext-mc-b' } },
    );
    expect(confirmed.body.data.confirmOrder.order.status).toBe('CONFIRMED');
    expect(
      (await t.gql(CANCEL, { i: { orderId: placed.order!.id } }, KEYS.admin)).body.data.cancelOrder.order.status,
    ).toBe('CANCELLED');
    expect((await t.db.query(`SELECT count(*)::int AS n FROM channel_incidents`)).rows[0].n).toBe(before[0].n);
  });
});
