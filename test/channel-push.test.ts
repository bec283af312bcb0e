// The outbound half of channels (point 3) against the marketplace sandbox over real HTTP (point 4): listed quantities
// pushed after storefront changes, coalesced per SKU, decreases first, versions that never revert, 429 slowing one
// channel only, retries with backoff, and an oversold marketplace order cancelled once.
import { afterAll, describe, expect, it } from 'vitest';
import { startChannelsApp } from './support/channels.js';
import { createChannelPusher } from '../orders/channel-pusher.js';
import { marketplaceClient } from '../channels/marketplace-client.js';
import { startMarketplaceSandbox, type MarketplaceSandbox } from '../channels/sandbox-marketplace.js';

const t = await startChannelsApp();
const sandboxes: MarketplaceSandbox[] = [];
afterAll(async () => {
  for (const s of sandboxes) await s.close();
});
const pusher = () =>
  createChannelPusher({
    db: t.db,
    metrics: t.metrics,
    channelListMs: 0,
    random: () => 0.5,
    clientFor: (c) => marketplaceClient(c, { timeoutMs: 2000 }),
  });
/** A marketplace sandbox and a channel pointing at it whose webhooks come back to the app. */
async function marketplace(
  id: string,
  rules: Record<string, unknown> = {},
  cfg: Parameters<typeof startMarketplaceSandbox>[0] = {},
) {
  const m = await startMarketplaceSandbox({ maxRequestsPerSecond: 0, ...cfg });
  sandboxes.push(m);
  const { webhookSecret, userErrors } = await t.createChannel({
    id,
    endpoint: m.url,
    maxPushesPerSecond: 100,
    ...rules,
  });
  expect(userErrors).toEqual([]);
  m.configure({ webhookUrl: `${t.url}/webhooks/channels/${id}`, webhookSecret: webhookSecret! });
  return m;
}
const metric = async (name: string, labels: string) => {
  const text = await t.metrics.registry.metrics();
  const line = text.split('\n').find((l) => l.startsWith(`${name}{`) && l.includes(labels));
  return line ? Number(line.split(' ').pop()) : 0;
};

describe('pushing listed quantities', () => {
  it('pushes each channel its rules applied to the storefront stock, coalesced to the newest per SKU', async () => {
    await t.product('PU-A', 10);
    const m = await marketplace('pu-a', { buffer: 2 });
    const p = pusher();
    expect(await p.pushOnce()).toBe(1);
    expect(m.listed('PU-A')).toBe(8);
    expect((await t.listings('pu-a', ['PU-A']))[0]).toMatchObject({
      desiredQuantity: 8,
      pushedQuantity: 8,
      pending: false,
    });
    // five storefront sales, then one pass: one push, of the newest figure
    for (let i = 0; i < 5; i++)
      expect(
        (
          await t.placeOrder({
            idempotencyKey: `pu-a-${i}`,
            customerId: `c${i}`,
            lines: [{ sku: 'PU-A', quantity: 1 }],
          })
        ).order!.status,
      ).toBe('RESERVED');
    expect((await t.listings('pu-a', ['PU-A']))[0]).toMatchObject({
      desiredQuantity: 3,
      pushedQuantity: 8,
      pending: true,
    });
    const before = m.stats().pushes;
    expect(await p.pushOnce()).toBe(1);
    expect(m.stats().pushes - before).toBe(1);
    expect(m.listed('PU-A')).toBe(3);
    expect(await metric('lastunit_channel_push_lag_seconds_count', 'channel="pu-a"')).toBe(2);
  });

  it('sends decreases and zeros before increases, and an older version never overwrites a newer one', async () => {
    await t.product('PU-UP', 1);
    await t.product('PU-DOWN', 5);
    const m = await marketplace('pu-order');
    const p = pusher();
    await p.pushOnce();
    await t.restock('PU-UP', 4);
    expect(
      (await t.placeOrder({ idempotencyKey: 'pu-down', lines: [{ sku: 'PU-DOWN', quantity: 5 }] })).order!.status,
    ).toBe('RESERVED');
    const mark = m.pushLog().length;
    await p.pushOnce();
    expect(
      m
        .pushLog()
        .slice(mark)
        .map((x) => [x.sku, x.quantity]),
    ).toEqual([
      ['PU-DOWN', 0],
      ['PU-UP', 5],
    ]);
    // a late retry of an older version is refused by the marketplace (409) and changes nothing
    const old = m.pushLog().find((x) => x.sku === 'PU-UP')!;
    const res = await fetch(`${m.url}/listings/PU-UP`, {
      method: 'PUT',
      headers: { 'idempotency-key': 'late-retry', 'content-type': 'application/json' },
      body: JSON.stringify({ quantity: 1, version: old.version - 1 }),
    });
    expect(res.status).toBe(409);
    expect(m.listed('PU-UP')).toBe(5);
  });

  it('a 429 slows that channel only; it catches up after Retry-After', async () => {
    await t.product('PU-R1', 3);
    await t.product('PU-R2', 3);
    await t.product('PU-R3', 3);
    const slow = await marketplace('pu-slow', {}, { maxRequestsPerSecond: 1 });
    const fast = await marketplace('pu-fast');
    const p = pusher();
    await p.pushOnce();
    for (const sku of ['PU-R1', 'PU-R2', 'PU-R3']) expect(fast.listed(sku)).toBe(3);
    expect(await metric('lastunit_channel_429_total', 'channel="pu-slow"')).toBeGreaterThan(0);
    expect(await metric('lastunit_channel_429_total', 'channel="pu-fast"')).toBe(0);
    const slowListed = ['PU-R1', 'PU-R2', 'PU-R3'].filter((s) => slow.listed(s) === 3).length;
    expect(slowListed).toBeLessThan(3);
    // later passes send the rest, at the marketplace's pace
    for (let i = 0; i < 40 && ['PU-R1', 'PU-R2', 'PU-R3'].some((s) => slow.listed(s) !== 3); i++) {
      await new Promise((r) => setTimeout(r, 250));
      await p.pushOnce();
    }
    for (const sku of ['PU-R1', 'PU-R2', 'PU-R3']) expect(slow.listed(sku)).toBe(3);
  });

  it('retries a failed push with backoff, keeping it pending', async () => {
    await t.product('PU-DOWN-MKT', 2);
    await t.createChannel({ id: 'pu-unreachable', endpoint: 'http://127.0.0.1:9', maxPushesPerSecond: 100 });
    const p = pusher();
    await p.pushOnce();
    const { rows } = await t.db.query(
      `SELECT attempts, next_attempt_at > now() AS later, last_error FROM channel_listings WHERE channel_id = 'pu-unreachable' AND sku = 'PU-DOWN-MKT'`,
    );
    expect(rows[0]).toMatchObject({ attempts: 1, later: true });
    expect((await t.listings('pu-unreachable', ['PU-DOWN-MKT']))[0]).toMatchObject({
      pending: true,
      pushedQuantity: null,
    });
    await p.pushOnce(); // not due yet: not tried again at once
    expect(
      (
        await t.db.query(
          `SELECT attempts FROM channel_listings WHERE channel_id = 'pu-unreachable' AND sku = 'PU-DOWN-MKT'`,
        )
      ).rows[0].attempts,
    ).toBe(1);
  });
});

describe('marketplace orders from the sandbox', () => {
  it('applies each sandbox order once despite duplicate, delayed, reordered deliveries, and cancels an oversold one once', async () => {
    await t.product('PU-SALE', 4);
    const m = await marketplace('pu-sale', {}, { duplicateRate: 1, maxDelayMs: 50 });
    const p = pusher();
    await p.pushOnce();
    expect(m.listed('PU-SALE')).toBe(4);
    // the storefront sells 2 the marketplace has not heard of yet; the marketplace then sells 3 of its 4
    expect(
      (await t.placeOrder({ idempotencyKey: 'pu-sale-store', lines: [{ sku: 'PU-SALE', quantity: 2 }] })).order!.status,
    ).toBe('RESERVED');
    const bought = [m.buy('PU-SALE'), m.buy('PU-SALE'), m.buy('PU-SALE')];
    expect(bought.every(Boolean)).toBe(true);
    await m.idle();
    expect(m.stats().deliveries).toBe(6); // every order delivered twice
    // two were covered, the third was not: never negative, one incident
    expect(await t.inventory('PU-SALE')).toEqual({ available: 0, reserved: 2, sold: 2 });
    const o = await t.admin(`{ channel(id: "pu-sale") { oversells { externalOrderId cancelRequested } } }`);
    expect(o.channel.oversells).toHaveLength(1);
    expect(await metric('lastunit_channel_oversells_total', 'channel="pu-sale"')).toBe(1);
    await Promise.all([p.pushOnce(), pusher().pushOnce()]);
    expect(await Promise.all([p.cancelOnce(), pusher().cancelOnce()])).toSatisfy((n: number[]) => n[0]! + n[1]! === 1);
    expect(await p.cancelOnce()).toBe(0);
    expect(m.cancelRequests()).toEqual([o.channel.oversells[0].externalOrderId]);
    expect(m.stats().cancelRequests).toBe(1);
    expect((await t.admin(`{ channel(id: "pu-sale") { oversells { cancelRequested } } }`)).channel.oversells).toEqual([
      { cancelRequested: true },
    ]);
    expect(m.listed('PU-SALE')).toBe(0);
    // the marketplace cancels one of its good orders: the unit comes back once and is listed again
    const good = bought.find((id) => id !== o.channel.oversells[0].externalOrderId)!;
    m.cancelOrder(good);
    await m.idle();
    expect(await t.inventory('PU-SALE')).toEqual({ available: 1, reserved: 2, sold: 1 });
    await p.pushOnce();
    expect(m.listed('PU-SALE')).toBe(1);
  });
});

describe("pushing to Shopify (a local stand-in answering Shopify's documented bodies)", () => {
  it('sets available with changeFromQuantity and @idempotent, recovers from CHANGE_FROM_QUANTITY_STALE, waits out THROTTLED, cancels an oversold order', async () => {
    const { startShopifyStandIn } = await import('../kit/shopify-standin.js');
    const shop = await startShopifyStandIn({ skus: ['SH-A'] });
    afterAll(() => shop.close());
    await t.product('SH-A', 6);
    const { webhookSecret } = await t.createChannel({
      id: 'shopify',
      kind: 'SHOPIFY',
      endpoint: shop.endpoint,
      maxPushesPerSecond: 100,
    });
    const p = createChannelPusher({
      db: t.db,
      metrics: t.metrics,
      channelListMs: 0,
      random: () => 0.5,
      clientFor: (c) => marketplaceClient(c, { timeoutMs: 2000, shopifyAccessToken: shop.token }),
    });
    await p.pushOnce();
    expect(shop.available('SH-A')).toBe(6);
    // the shop sells 2 on its own; lastunit sells 1 on the storefront: the next set is stale, re-read, then applied
    shop.sell('SH-A', 2);
    expect(
      (await t.placeOrder({ idempotencyKey: 'sh-a-1', lines: [{ sku: 'SH-A', quantity: 1 }] })).order!.status,
    ).toBe('RESERVED');
    await p.pushOnce();
    expect(shop.stats().stale).toBe(1);
    expect(shop.available('SH-A')).toBe(5);
    expect((await t.listings('shopify', ['SH-A']))[0]).toMatchObject({
      desiredQuantity: 5,
      pushedQuantity: 5,
      pending: false,
    });
    // throttled: the push stays pending and goes through on a later pass
    shop.throttle(1);
    expect(
      (await t.placeOrder({ idempotencyKey: 'sh-a-2', lines: [{ sku: 'SH-A', quantity: 1 }] })).order!.status,
    ).toBe('RESERVED');
    await p.pushOnce();
    expect(shop.stats().throttled).toBe(1);
    expect((await t.listings('shopify', ['SH-A']))[0]!.pending).toBe(true);
    await t.db.query(`UPDATE channel_listings SET next_attempt_at = now() WHERE channel_id = 'shopify'`); // skip the Retry-After wait
    await new Promise((r) => setTimeout(r, 1100)); // the channel's own pause
    await p.pushOnce();
    expect(shop.available('SH-A')).toBe(4);
    // an orders/create for more than is left: oversold, and Shopify is asked to cancel it, once
    const r = await t.shopifyEvent('shopify', webhookSecret!, {
      eventId: 'sh-ev-1',
      topic: 'orders/create',
      orderId: '5550001',
      lines: [{ sku: 'SH-A', quantity: 9 }],
    });
    expect(r.body.result).toBe('oversold');
    expect(await p.cancelOnce()).toBe(1);
    expect(await p.cancelOnce()).toBe(0);
    expect(shop.stats().cancels).toEqual(['gid://shopify/Order/5550001']);
  });
});
