// The admin fields behind the shop's console (docs/console.md, docs/api.md) through the whole pipeline: stock split by
// reservation state, open holds, an admin's release of another client's hold, the push retry's refusals, the roles,
// and the per-second sale series sampled from the metrics (common/sale-activity.ts).
import { describe, expect, it } from 'vitest';
import { KEYS, startTestApp } from './support/app.js';
import { createMetrics } from '../common/metrics.js';
import { startSaleActivity } from '../common/sale-activity.js';

const t = await startTestApp();
const STOCK = `query($skus: [String!]) { stockLevels(skus: $skus) { sku available held awaitingPayment sold purchaseLimit components { sku quantity } } }`;
const OPEN = `{ openOrders { holds { orderId status customerId lines { sku quantity } expiresAt } awaitingPayment { orderId } } }`;
const CREATE = `mutation($input: CreateProductInput!) { createProduct(input: $input) { userErrors { code message } } }`;
const RETRY = `mutation($input: RetryChannelPushInput!) { retryChannelPush(input: $input) { listing { sku } userErrors { code field message } } }`;

describe('the console admin fields', () => {
  it('splits reserved units into held and awaiting payment, and lists each hold with its expiry', async () => {
    await t.product('CAPI-1', 6);
    const a = await t.placeOrder({
      idempotencyKey: 'capi-a',
      customerId: 'c-a',
      lines: [{ sku: 'CAPI-1', quantity: 2 }],
    });
    expect(a.userErrors).toEqual([]);
    const r = await t.gql(STOCK, { skus: ['CAPI-1'] }, KEYS.admin);
    expect(r.body.data.stockLevels).toEqual([
      { sku: 'CAPI-1', available: 4, held: 2, awaitingPayment: 0, sold: 0, purchaseLimit: null, components: null },
    ]);
    const open = await t.gql(OPEN, {}, KEYS.admin);
    const hold = open.body.data.openOrders.holds.find((h: { orderId: string }) => h.orderId === a.order!.id);
    expect(hold).toMatchObject({ status: 'RESERVED', customerId: 'c-a', lines: [{ sku: 'CAPI-1', quantity: 2 }] });
    expect(new Date(hold.expiresAt).getTime()).toBeGreaterThan(Date.now());
  });

  it("lets an admin release any client's hold; another client's storefront key still cannot", async () => {
    await t.product('CAPI-2', 1);
    const a = await t.placeOrder({
      idempotencyKey: 'capi-b',
      customerId: 'c-b',
      lines: [{ sku: 'CAPI-2', quantity: 1 }],
    });
    const orderId = a.order!.id;
    expect((await t.release(orderId, KEYS.storefront2)).userErrors).toMatchObject([{ code: 'NOT_FOUND' }]);
    expect(await t.inventory('CAPI-2')).toEqual({ available: 0, reserved: 1, sold: 0 });
    const released = await t.release(orderId, KEYS.admin);
    expect(released).toMatchObject({ order: { id: orderId, status: 'CANCELLED' }, userErrors: [] });
    expect(await t.inventory('CAPI-2')).toEqual({ available: 1, reserved: 0, sold: 0 });
    // once released, again is a no-op answering the same order
    expect((await t.release(orderId, KEYS.admin)).order).toMatchObject({ status: 'CANCELLED' });
    expect(await t.inventory('CAPI-2')).toEqual({ available: 1, reserved: 0, sold: 0 });
  });

  it('shows a bundle with its components and the minimum they allow, and a purchase limit', async () => {
    await t.gql(
      CREATE,
      {
        input: {
          sku: 'CAPI-B1',
          name: 'One',
          priceAmount: 100,
          currencyCode: 'USD',
          initialStock: 5,
          purchaseLimit: 2,
        },
      },
      KEYS.admin,
    );
    await t.product('CAPI-B2', 9);
    const created = await t.gql(
      CREATE,
      {
        input: {
          sku: 'CAPI-SET',
          name: 'A set',
          priceAmount: 100,
          currencyCode: 'USD',
          components: [
            { sku: 'CAPI-B1', quantity: 1 },
            { sku: 'CAPI-B2', quantity: 3 },
          ],
        },
      },
      KEYS.admin,
    );
    expect(created.body.data.createProduct.userErrors).toEqual([]);
    const r = await t.gql(STOCK, { skus: ['CAPI-SET'] }, KEYS.admin);
    const one = await t.gql(STOCK, { skus: ['CAPI-B1'] }, KEYS.admin);
    expect(one.body.data.stockLevels[0]).toMatchObject({ sku: 'CAPI-B1', purchaseLimit: 2, components: null });
    expect(r.body.data.stockLevels).toEqual([
      {
        sku: 'CAPI-SET',
        available: 3,
        held: 0,
        awaitingPayment: 0,
        sold: 0,
        purchaseLimit: null,
        components: [
          { sku: 'CAPI-B1', quantity: 1 },
          { sku: 'CAPI-B2', quantity: 3 },
        ],
      },
    ]);
  });

  it('refuses a push retry of a listing that does not exist, writing nothing', async () => {
    const r = await t.gql(RETRY, { input: { channelId: 'no-such-channel', sku: 'CAPI-1' } }, KEYS.admin);
    expect(r.body.data.retryChannelPush).toMatchObject({ listing: null, userErrors: [{ code: 'NOT_FOUND' }] });
  });

  it('answers every console field to admin keys only', async () => {
    for (const q of [
      '{ stockLevels { sku } }',
      '{ openOrders { holds { orderId } } }',
      '{ channelHealth { listings { sku } } }',
      '{ saleActivity { claims } }',
    ]) {
      const r = await t.gql(q, {}, KEYS.storefront);
      expect([q, r.status, r.body.errors?.[0]?.extensions?.code]).toEqual([q, 403, 'FORBIDDEN']);
      expect((await t.gql(q, {}, KEYS.admin)).body.errors).toBeUndefined();
    }
  });
});

describe('the sale series (common/sale-activity.ts)', () => {
  it("turns the counters' movement between samples into claims, holds, refusals and the mean delivery lag", async () => {
    const metrics = createMetrics();
    const activity = startSaleActivity(metrics, { intervalMs: 3_600_000 }); // samples only when told, here
    await activity.sample();
    metrics.placeOrderOutcomes.inc({ outcome: 'RESERVED' }, 3);
    metrics.placeOrderOutcomes.inc({ outcome: 'SOLD_OUT' }, 5);
    metrics.placeOrderOutcomes.inc({ outcome: 'REPLAYED' }, 7); // a replay claims nothing and refuses nothing
    metrics.outboxDeliveryLag.observe(0.01);
    metrics.outboxDeliveryLag.observe(0.03);
    await activity.sample();
    await activity.sample(); // a quiet second
    const [busy, quiet] = activity.last(900);
    expect(busy).toMatchObject({ claims: 8, holds: 3, refusals: 5 });
    expect(busy!.deliveryLagMs).toBeCloseTo(20, 6);
    expect(quiet).toMatchObject({ claims: 0, holds: 0, refusals: 0, deliveryLagMs: null });
    expect(await activity.reconcilerLastRunAt()).toBeNull();
    metrics.reconcilerLastRun.set(1_800_000_000);
    expect(await activity.reconcilerLastRunAt()).toEqual(new Date(1_800_000_000_000));
    activity.stop();
  });
});
