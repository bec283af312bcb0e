// Bundles (point 5): a product made of components, claimed as its components in one transaction, its availability
// the minimum over them, announced (events and channel pushes) whenever a component changes; carts and channels that
// share a component never oversell it, under concurrency, through the server over HTTP.
import { afterAll, describe, expect, it, onTestFinished } from 'vitest';
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
/** The channel pusher against the marketplace sandboxes the channels point at, reading the channel list every pass. */
const pusher = () =>
  createChannelPusher({
    db: t.db,
    metrics: t.metrics,
    channelListMs: 0,
    clientFor: (c) => marketplaceClient(c, { timeoutMs: 2000 }),
  });
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

  const setBuckets = async (sku: string, buckets: number) =>
    (
      await t.admin(
        `mutation($input: SetStockBucketsInput!) { setStockBuckets(input: $input) { product { availability { available } } userErrors { code field } } }`,
        { input: { sku, buckets } },
      )
    ).setStockBuckets as { product: { availability: { available: number } } | null; userErrors: { code: string }[] };
  /** What the relay would publish now for the newest availability event of `sku` (availability_now: committed figures). */
  const published = async (sku: string) =>
    (
      await t.db.query(
        `SELECT availability_now(p_sku => aggregate_key, p_payload => payload) AS p FROM outbox
          WHERE topic = 'availability' AND aggregate_key = $1 ORDER BY id DESC LIMIT 1`,
        [sku],
      )
    ).rows[0]?.p as { available: number; version: number } | undefined;

  it("a component with stock buckets: the bundle sees the SKU (the buckets' sums), buyers of both race, nobody oversold or falsely refused", async () => {
    await t.product('BU-B', 24);
    await t.product('BU-B-OTHER', 100);
    await bundle('BU-B-KIT', [
      { sku: 'BU-B', quantity: 3 },
      { sku: 'BU-B-OTHER', quantity: 1 },
    ]);
    expect((await setBuckets('BU-B', 4)).userErrors).toEqual([]); // a bundle component may have buckets
    expect((await setBuckets('BU-B-KIT', 2)).userErrors).toEqual([{ code: 'INVALID_INPUT', field: ['input', 'sku'] }]);
    expect((await available('BU-B-KIT')).available).toBe(8);
    const k = await t.placeOrder({ idempotencyKey: 'bu-b-1', lines: [{ sku: 'BU-B-KIT', quantity: 1 }] });
    expect(k.order!.status).toBe('RESERVED');
    const kitEvents = async () =>
      (
        await t.db.query(
          `SELECT count(*)::int AS n FROM outbox WHERE topic = 'availability' AND aggregate_key = 'BU-B-KIT'`,
        )
      ).rows[0].n as number;
    const before = await kitEvents();
    const c = await t.placeOrder({ idempotencyKey: 'bu-b-2', lines: [{ sku: 'BU-B', quantity: 2 }] });
    expect(c.order!.status).toBe('RESERVED');
    expect(await kitEvents()).toBe(before + 1); // the component's claim, from a bucket, announced its bundle
    expect(await t.inventory('BU-B')).toEqual({ available: 19, reserved: 5, sold: 0 });
    const kit = await available('BU-B-KIT');
    expect(kit.available).toBe(6); // floor(19 / 3)
    // and that event is published with the committed figures
    expect(await published('BU-B-KIT')).toMatchObject({ available: 6, version: kit.version });
    // the buckets hold the units; the SKU row keeps 0s
    const row = (await t.db.query(`SELECT available, reserved FROM inventory WHERE sku = 'BU-B'`)).rows[0];
    expect(row).toEqual({ available: 0, reserved: 0 });

    // 40 buyers at once, kits (3 units each) and the component (1 or 2), mixed with a plain SKU in one cart
    const carts = [
      [{ sku: 'BU-B-KIT', quantity: 1 }],
      [{ sku: 'BU-B', quantity: 1 }],
      [
        { sku: 'BU-B', quantity: 2 },
        { sku: 'BU-B-OTHER', quantity: 1 },
      ],
      [
        { sku: 'BU-B-KIT', quantity: 1 },
        { sku: 'BU-B', quantity: 1 },
      ],
    ];
    const need = (lines: { sku: string; quantity: number }[]) =>
      lines.reduce((n, l) => n + (l.sku === 'BU-B-KIT' ? 3 : l.sku === 'BU-B' ? 1 : 0) * l.quantity, 0);
    const results = await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        t
          .placeOrder({ idempotencyKey: `bu-b-r${i}`, customerId: `bu-b-c${i}`, lines: carts[i % carts.length]! })
          .then((r) => ({
            ok: r.order!.status === 'RESERVED',
            code: r.order!.rejection?.code,
            need: need(carts[i % carts.length]!),
          })),
      ),
    );
    const after = await t.inventory('BU-B');
    const taken = results.filter((r) => r.ok).reduce((n, r) => n + r.need, 0);
    expect(after.available + after.reserved + after.sold).toBe(24); // I2 over the buckets: no unit made or lost
    expect(after.reserved).toBe(5 + taken); // every unit taken belongs to one winning order
    expect(after.available).toBeGreaterThanOrEqual(0);
    // no false sold out: stock only fell during the race, so a refusal needed more than what is left even now
    const refused = results.filter((r) => !r.ok);
    expect(refused.length).toBeGreaterThan(0);
    for (const r of refused) {
      expect(['SOLD_OUT', 'INSUFFICIENT_STOCK']).toContain(r.code);
      expect(r.need).toBeGreaterThan(after.available);
    }
    expect((await available('BU-B-KIT')).available).toBe(Math.floor(after.available / 3));
    const buckets = (await t.db.query(`SELECT available FROM inventory_buckets WHERE sku = 'BU-B'`)).rows;
    expect(buckets).toHaveLength(4);
    expect(buckets.every((b: { available: number }) => b.available >= 0)).toBe(true);
    // a bucket's claim wrote the kit's events without figures (the relay adds the committed ones: the claim holding
    // its bucket did not add up the kit's components); gathered back into one row before the relay ran, such an event
    // is still published with the kit's figures
    const bare = (
      await t.db.query(
        `SELECT payload FROM outbox WHERE topic = 'availability' AND aggregate_key = 'BU-B-KIT' AND NOT (payload ? 'available')
          ORDER BY id`,
      )
    ).rows.map((r) => r.payload as Record<string, unknown>);
    expect(bare.length).toBeGreaterThan(0);
    for (const p of bare) expect(Object.keys(p).sort()).toEqual(['sku', 'updatedAt']);
    const written = bare.at(-1)!;
    expect((await setBuckets('BU-B', 1)).userErrors).toEqual([]);
    const kitNow = await available('BU-B-KIT');
    const lastWithoutFigures = (
      await t.db.query(`SELECT availability_now(p_sku => 'BU-B-KIT', p_payload => $1::jsonb) AS p`, [
        JSON.stringify(written),
      ])
    ).rows[0].p;
    expect(lastWithoutFigures).toMatchObject({ sku: 'BU-B-KIT', available: kitNow.available, version: kitNow.version });
  });

  it("a bucketed SKU on a channel: createChannel lists it from its buckets, and its listing and its bundle's follow claims", async () => {
    await t.product('BU-H', 30);
    expect((await setBuckets('BU-H', 4)).userErrors).toEqual([]); // before any channel: buckets, then listed
    const m = await startMarketplaceSandbox({ maxRequestsPerSecond: 0 });
    onTestFinished(() => m.close());
    const created = await t.createChannel({ id: 'bu-hot', endpoint: m.url, maxPushesPerSecond: 100 });
    expect(created.userErrors).toEqual([]);
    await t.product('BU-H2', 12);
    expect((await setBuckets('BU-H2', 3)).userErrors).toEqual([]); // and listed first, then buckets
    await bundle('BU-H-KIT', [{ sku: 'BU-H2', quantity: 4 }]); // a bundle of a bucketed, listed component
    const p = pusher();
    await p.pushOnce();
    expect([m.listed('BU-H'), m.listed('BU-H2'), m.listed('BU-H-KIT')]).toEqual([30, 12, 3]);
    for (const [i, [sku, quantity]] of (
      [
        ['BU-H', 7],
        ['BU-H2', 5],
      ] as const
    ).entries())
      expect((await t.placeOrder({ idempotencyKey: `bu-h-${i}`, lines: [{ sku, quantity }] })).order!.status).toBe(
        'RESERVED',
      );
    await p.pushOnce();
    expect([m.listed('BU-H'), m.listed('BU-H2'), m.listed('BU-H-KIT')]).toEqual([23, 7, 1]);
    // a marketplace order of the bucketed SKU takes its units from the buckets, and the listing follows it too
    const sold = await t.sandboxEvent('bu-hot', created.webhookSecret!, {
      eventId: 'bu-hot-e1',
      externalOrderId: 'bu-hot-o1',
      lines: [{ sku: 'BU-H', quantity: 3 }],
    });
    expect(sold.body.result).toBe('confirmed');
    expect(await t.inventory('BU-H')).toEqual({ available: 20, reserved: 7, sold: 3 });
    await p.pushOnce();
    expect(m.listed('BU-H')).toBe(20);
    // the sweeper's evening out keeps the sum: no mark, nothing to recompute
    await t.db.query('DELETE FROM bundle_changes');
    await t.db.query('SELECT rebalance_stock_buckets()');
    expect((await t.db.query(`SELECT count(*)::int AS n FROM bundle_changes`)).rows[0].n).toBe(0);
    // gathered back into one row: the listing stays what the buckets summed to
    expect((await setBuckets('BU-H', 1)).product!.availability.available).toBe(20);
    await p.pushOnce();
    expect(m.listed('BU-H')).toBe(20);
  });

  it('claims of a listed, bundled SKU in different buckets never wait for one another (nothing shared is written)', async () => {
    await t.product('BU-W', 40);
    await bundle('BU-W-KIT', [{ sku: 'BU-W', quantity: 2 }]);
    expect((await setBuckets('BU-W', 4)).userErrors).toEqual([]);
    await t.createChannel({ id: 'bu-wait' }); // every SKU is listed now, BU-W too: its buckets are followed
    await t.db.query(`DELETE FROM bundle_changes WHERE bundle_sku LIKE 'BU-W%'`); // createProduct's mark of the kit
    const [a, b] = [await t.db.pool.connect(), await t.db.pool.connect()];
    try {
      // a claim holds its bucket (and whatever its triggers wrote) in an open transaction
      await a.query('BEGIN');
      expect((await a.query(`SELECT claim_line('BU-W', 1, false, NULL, NULL) AS r`)).rows[0].r).toBeNull();
      // a second claim of the same SKU takes another bucket at once: no row lock of the first is in its way
      await b.query('BEGIN');
      await b.query(`SET LOCAL lock_timeout = '2s'`);
      expect((await b.query(`SELECT claim_line('BU-W', 1, false, NULL, NULL) AS r`)).rows[0].r).toBeNull();
      await b.query('COMMIT');
      await a.query('COMMIT');
    } finally {
      await a.query('ROLLBACK').catch(() => {});
      a.release();
      b.release();
    }
    expect(await t.inventory('BU-W')).toEqual({ available: 38, reserved: 2, sold: 0 });
    // each claim left its marks for the pusher: the SKU's listing and its bundle's
    const marks = await t.db.query(
      `SELECT bundle_sku, count(*)::int AS n FROM bundle_changes WHERE bundle_sku LIKE 'BU-W%' GROUP BY 1 ORDER BY 1`,
    );
    expect(marks.rows).toEqual([
      { bundle_sku: 'BU-W', n: 2 },
      { bundle_sku: 'BU-W-KIT', n: 2 },
    ]);
  });

  it("pushes a bundle's listing when a component changes", async () => {
    await t.product('BU-L', 9);
    await bundle('BU-L3', [{ sku: 'BU-L', quantity: 3 }]);
    const m = await startMarketplaceSandbox({ maxRequestsPerSecond: 0 });
    afterAll(() => m.close());
    await t.createChannel({ id: 'bu-push', endpoint: m.url, maxPushesPerSecond: 100 });
    const p = pusher();
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
