// Bundles (point 5): a product made of components, claimed as its components in one transaction, its availability
// the minimum over them, announced (events and channel pushes) whenever a component changes; carts and channels that
// share a component never oversell it, under concurrency, through the server over HTTP.
import { afterAll, describe, expect, it } from 'vitest';
import { startChannelsApp } from './support/channels.js';
import { createChannelPusher } from '../orders/channel-pusher.js';
import { marketplaceClient } from '../channels/marketplace-client.js';
import { startMarketplaceSandbox } from '../channels/sandbox-marketplace.js';

const t = await startChannelsApp();
const BUNDLE = `mutation($input: CreateProductInput!) { createProduct(input: $input) { product { sku components { sku quantity } availability { available version } } userErrors { code field } } }`;
const bundle = async (
  sku: string,
  components: { sku: string; quantity: number }[],
  extra: Record<string, unknown> = {},
) =>
  (
    await t.admin(BUNDLE, {
      input: { sku, name: `Bundle ${sku}`, priceAmount: 5000, currencyCode: 'USD', components, ...extra },
    })
  ).createProduct;
const available = async (sku: string) =>
  (await t.gql(`query($sku: String!) { product(sku: $sku) { availability { available version } } }`, { sku })).body.data
    .product.availability as { available: number; version: number };

describe('bundles', () => {
  it('setPurchaseLimit counts the units a customer holds through bundles, as the claim does', async () => {
    await t.product('BU-LIM', 20);
    await bundle('BU-LIM-KIT', [{ sku: 'BU-LIM', quantity: 2 }]);
    // no limit yet: cust-lim holds 2 kits (4 units of BU-LIM) and 1 unit on its own line, cust-other 1 kit (2 units)
    expect(
      (
        await t.placeOrder({
          idempotencyKey: 'bu-lim-1',
          customerId: 'cust-lim',
          lines: [
            { sku: 'BU-LIM-KIT', quantity: 2 },
            { sku: 'BU-LIM', quantity: 1 },
          ],
        })
      ).order!.status,
    ).toBe('RESERVED');
    expect(
      (
        await t.placeOrder({
          idempotencyKey: 'bu-lim-2',
          customerId: 'cust-other',
          lines: [{ sku: 'BU-LIM-KIT', quantity: 1 }],
        })
      ).order!.status,
    ).toBe('RESERVED');
    const d = await t.admin(`mutation { setPurchaseLimit(input: {sku: "BU-LIM", limit: 6}) { userErrors { code } } }`);
    expect(d.setPurchaseLimit.userErrors).toEqual([]);
    const counts = await t.db.query(
      `SELECT customer_id, units FROM customer_purchases WHERE sku = 'BU-LIM' ORDER BY customer_id`,
    );
    expect(counts.rows).toEqual([
      { customer_id: 'cust-lim', units: 5 },
      { customer_id: 'cust-other', units: 2 },
    ]);
    // cust-lim has 5 of 6: two more units (on their own or through a kit) are refused, one more is taken
    const over = await t.placeOrder({
      idempotencyKey: 'bu-lim-3',
      customerId: 'cust-lim',
      lines: [{ sku: 'BU-LIM', quantity: 2 }],
    });
    const overKit = await t.placeOrder({
      idempotencyKey: 'bu-lim-4',
      customerId: 'cust-lim',
      lines: [{ sku: 'BU-LIM-KIT', quantity: 1 }],
    });
    for (const o of [over, overKit]) expect(o.order?.rejection?.code ?? o.userErrors[0]?.code).toBe('PURCHASE_LIMIT');
    expect(
      (
        await t.placeOrder({
          idempotencyKey: 'bu-lim-5',
          customerId: 'cust-lim',
          lines: [{ sku: 'BU-LIM', quantity: 1 }],
        })
      ).order!.status,
    ).toBe('RESERVED');
    // cust-other has 2 of 6: two more kits fit
    expect(
      (
        await t.placeOrder({
          idempotencyKey: 'bu-lim-6',
          customerId: 'cust-other',
          lines: [{ sku: 'BU-LIM-KIT', quantity: 2 }],
        })
      ).order!.status,
    ).toBe('RESERVED');
    expect(await t.inventory('BU-LIM')).toEqual({ available: 8, reserved: 12, sold: 0 });
  });

  it('a purchase-limit refusal leaves no trace: no availability event for the SKU or its bundles, no version step', async () => {
    await t.product('BU-PL', 10);
    await bundle('BU-PL-KIT', [{ sku: 'BU-PL', quantity: 1 }]);
    expect(
      (await t.admin(`mutation { setPurchaseLimit(input: {sku: "BU-PL", limit: 1}) { userErrors { code } } }`))
        .setPurchaseLimit.userErrors,
    ).toEqual([]);
    expect(
      (await t.placeOrder({ idempotencyKey: 'bu-pl-1', customerId: 'cust-pl', lines: [{ sku: 'BU-PL', quantity: 1 }] }))
        .order!.status,
    ).toBe('RESERVED');
    const trace = async () => ({
      events: (
        await t.db.query(
          `SELECT count(*)::int AS n FROM outbox WHERE topic = 'availability' AND aggregate_key IN ('BU-PL', 'BU-PL-KIT')`,
        )
      ).rows[0].n,
      version: (await t.db.query(`SELECT version FROM inventory WHERE sku = 'BU-PL'`)).rows[0].version,
    });
    const before = await trace();
    // the single-line claim of a limited SKU: refused under the limit, and what the claim's triggers wrote is undone with it
    const refused = await t.placeOrder({
      idempotencyKey: 'bu-pl-2',
      customerId: 'cust-pl',
      lines: [{ sku: 'BU-PL', quantity: 1 }],
    });
    expect(refused.order?.rejection?.code ?? refused.userErrors[0]?.code).toBe('PURCHASE_LIMIT');
    expect(await trace()).toEqual(before);
    expect(await t.inventory('BU-PL')).toEqual({ available: 9, reserved: 1, sold: 0 });
  });

  it('creates a bundle whose availability is the minimum over its components; refuses bad ones, writing nothing', async () => {
    await t.product('BU-A', 10);
    await t.product('BU-C', 3);
    const b = await bundle('BU-KIT', [
      { sku: 'BU-A', quantity: 2 },
      { sku: 'BU-C', quantity: 1 },
    ]);
    expect(b.userErrors).toEqual([]);
    expect(b.product).toMatchObject({
      sku: 'BU-KIT',
      components: [
        { sku: 'BU-A', quantity: 2 },
        { sku: 'BU-C', quantity: 1 },
      ],
      availability: { available: 3 },
    });
    expect((await bundle('BU-X1', [{ sku: 'NOPE', quantity: 1 }])).userErrors).toEqual([
      { code: 'UNKNOWN_SKU', field: ['input', 'components', '0', 'sku'] },
    ]);
    expect((await bundle('BU-X2', [{ sku: 'BU-KIT', quantity: 1 }])).userErrors).toEqual([
      { code: 'INVALID_INPUT', field: ['input', 'components', '0', 'sku'] },
    ]);
    expect((await bundle('BU-X3', [{ sku: 'BU-A', quantity: 1 }], { initialStock: 4 })).userErrors).toEqual([
      { code: 'INVALID_INPUT', field: ['input', 'initialStock'] },
    ]);
    expect(
      (
        await bundle('BU-X4', [
          { sku: 'BU-A', quantity: 1 },
          { sku: 'BU-A', quantity: 2 },
        ])
      ).userErrors[0].code,
    ).toBe('INVALID_INPUT');
    expect((await t.db.query(`SELECT count(*)::int AS n FROM products WHERE sku LIKE 'BU-X%'`)).rows[0].n).toBe(0);
    const r = await t.admin(`mutation { restock(input: {sku: "BU-KIT", quantity: 5}) { userErrors { code } } }`);
    expect(r.restock.userErrors).toEqual([{ code: 'INVALID_INPUT' }]);
  });

  it('claims every component in one order, announces the bundle when a component changes, and gives the units back on release', async () => {
    await t.product('BU-P', 6);
    await t.product('BU-Q', 6);
    await bundle('BU-PAIR', [
      { sku: 'BU-P', quantity: 1 },
      { sku: 'BU-Q', quantity: 2 },
    ]);
    const before = await available('BU-PAIR');
    expect(before.available).toBe(3);
    const o = await t.placeOrder({ idempotencyKey: 'bu-pair-1', lines: [{ sku: 'BU-PAIR', quantity: 2 }] });
    expect(o.order!.status).toBe('RESERVED');
    expect(await t.inventory('BU-P')).toEqual({ available: 4, reserved: 2, sold: 0 });
    expect(await t.inventory('BU-Q')).toEqual({ available: 2, reserved: 4, sold: 0 });
    const after = await available('BU-PAIR');
    expect(after.available).toBe(1);
    expect(after.version).toBeGreaterThan(before.version);
    // a storefront restock of one component announces the bundle (an availability event in the same transaction)
    await t.restock('BU-Q', 2);
    const { rows } = await t.db.query(
      `SELECT payload FROM outbox WHERE topic = 'availability' AND aggregate_key = 'BU-PAIR' ORDER BY id DESC LIMIT 1`,
    );
    expect(rows[0].payload).toMatchObject({ sku: 'BU-PAIR', available: 2 });
    // not enough for one more pair: refused, nothing claimed
    const no = await t.placeOrder({ idempotencyKey: 'bu-pair-2', lines: [{ sku: 'BU-PAIR', quantity: 3 }] });
    expect(no.order!.rejection!.code).toBe('INSUFFICIENT_STOCK');
    await t.release(o.order!.id);
    expect(await t.inventory('BU-P')).toEqual({ available: 6, reserved: 0, sold: 0 });
    expect(await t.inventory('BU-Q')).toEqual({ available: 8, reserved: 0, sold: 0 });
  });

  it('never oversells a component shared by concurrent carts, cart lines and two channels', async () => {
    await t.product('BU-S', 10); // the shared component: 10 units for everyone
    await t.product('BU-T', 100);
    await bundle('BU-S2T', [
      { sku: 'BU-S', quantity: 2 },
      { sku: 'BU-T', quantity: 1 },
    ]);
    await bundle('BU-S3', [{ sku: 'BU-S', quantity: 3 }]);
    const x = await t.createChannel({ id: 'bu-x' });
    const y = await t.createChannel({ id: 'bu-y' });
    const units: Record<string, number> = { 'BU-S': 1, 'BU-S2T': 2, 'BU-S3': 3 };
    const carts = [
      [
        { sku: 'BU-S2T', quantity: 1 },
        { sku: 'BU-S3', quantity: 1 },
      ], // two lines sharing the component: 5 units
      [
        { sku: 'BU-S', quantity: 2 },
        { sku: 'BU-S2T', quantity: 1 },
      ],
      [{ sku: 'BU-S3', quantity: 1 }],
      [{ sku: 'BU-S2T', quantity: 1 }],
      [{ sku: 'BU-S', quantity: 1 }],
    ];
    const storefront = Array.from({ length: 20 }, (_, i) =>
      t
        .placeOrder({ idempotencyKey: `bu-s-${i}`, customerId: `bu-cust-${i}`, lines: carts[i % carts.length]! })
        .then((r) => ({
          ok: r.order!.status === 'RESERVED',
          s: carts[i % carts.length]!.reduce((n, l) => n + units[l.sku]! * l.quantity, 0),
        })),
    );
    const channel = (id: string, secret: string, sku: string, i: number) =>
      t
        .sandboxEvent(id, secret, {
          eventId: `${id}-e${i}`,
          externalOrderId: `${id}-o${i}`,
          lines: [{ sku, quantity: 1 }],
        })
        .then((r) => ({ ok: r.body.result === 'confirmed', s: units[sku]! }));
    const marketplace = [
      ...Array.from({ length: 8 }, (_, i) => channel('bu-x', x.webhookSecret!, 'BU-S2T', i)),
      ...Array.from({ length: 8 }, (_, i) => channel('bu-y', y.webhookSecret!, i % 2 ? 'BU-S' : 'BU-S3', i)),
    ];
    const results = await Promise.all([...storefront, ...marketplace]);
    const taken = results.filter((r) => r.ok).reduce((n, r) => n + r.s, 0);
    const inv = await t.inventory('BU-S');
    expect(inv.available).toBeGreaterThanOrEqual(0);
    expect(inv.available + inv.reserved + inv.sold).toBe(10); // I2: no unit made or lost
    expect(inv.reserved + inv.sold).toBe(taken); // every unit taken belongs to exactly one winning order
    expect(taken).toBeLessThanOrEqual(10);
    expect(results.some((r) => !r.ok)).toBe(true); // the demand was larger than the stock
    expect(results.some((r) => r.ok && r.s > 1)).toBe(true); // bundles took their components' units
  });

  it("pushes a bundle's listing when a component changes", async () => {
    await t.product('BU-L', 9);
    await bundle('BU-L3', [{ sku: 'BU-L', quantity: 3 }]);
    const m = await startMarketplaceSandbox({ maxRequestsPerSecond: 0 });
    afterAll(() => m.close());
    await t.createChannel({ id: 'bu-push', endpoint: m.url, maxPushesPerSecond: 100 });
    const p = createChannelPusher({
      db: t.db,
      metrics: t.metrics,
      channelListMs: 0,
      clientFor: (c) => marketplaceClient(c, { timeoutMs: 2000 }),
    });
    await p.pushOnce();
    expect([m.listed('BU-L'), m.listed('BU-L3')]).toEqual([9, 3]);
    expect(
      (await t.placeOrder({ idempotencyKey: 'bu-l-1', lines: [{ sku: 'BU-L', quantity: 4 }] })).order!.status,
    ).toBe('RESERVED');
    await p.pushOnce();
    expect([m.listed('BU-L'), m.listed('BU-L3')]).toEqual([5, 1]);
    expect((await t.listings('bu-push', ['BU-L3']))[0]).toMatchObject({
      desiredQuantity: 1,
      pushedQuantity: 1,
      pending: false,
    });
  });
});
