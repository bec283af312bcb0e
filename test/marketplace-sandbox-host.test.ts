// The marketplace sandbox in-process (MARKETPLACE_SANDBOX, node/marketplace.ts), through the real Node host (a child
// process): in development it starts like the payment sandbox, with the demo SANDBOX channel pointing at it, and the
// pusher lists the demo catalog there; a restart moves the channel to the new sandbox and pushes everything again; a
// database whose channels point elsewhere starts none; production refuses it (exit 2, naming the variable).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from './support/db.js';
import { runScript, spawnServer, type ServerProcess } from '../kit/server.js';
import { KEYS } from './support/app.js';
import { seedProducts } from '../db/catalog-store.js';
import { DEMO_CATALOG, DEMO_CHANNEL } from '../node/demo-catalog.js';
import { loadConfig } from '../node/config.js';

const API_KEYS = `storefront:${KEYS.storefront},admin:${KEYS.admin}`;
// the development default: no MARKETPLACE_SANDBOX ('' undoes kit/server.ts's off)
const DEV = { NODE_ENV: 'development', MARKETPLACE_SANDBOX: '', CHANNEL_PUSH_POLL_MS: '200' };
// what the demo channel lists of each demo SKU: its buffer below the stock
const demoListed = (stock: number) => Math.max(0, stock - DEMO_CHANNEL.buffer);

describe('the marketplace sandbox in the Node host', () => {
  let tdb: TestDatabase;
  let host: ServerProcess | undefined;
  beforeAll(async () => {
    tdb = await createTestDatabase({ max: 2 });
    await seedProducts(tdb.db, DEMO_CATALOG); // what the embedded default seeds
  });
  afterAll(async () => {
    await host?.stop();
    await tdb?.drop();
  });
  const start = async (env: Record<string, string> = DEV) => {
    host = await spawnServer({ env: { DATABASE_URL: tdb.url, API_KEYS, ...env } });
    return host;
  };
  const gql = async (key: string, query: string, variables: Record<string, unknown> = {}) => {
    const res = await fetch(host!.endpoint, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
      body: JSON.stringify({ query, variables }),
    });
    const body = (await res.json()) as any;
    if (body.errors) throw new Error(JSON.stringify(body.errors));
    return body.data;
  };
  const demoChannel = async () =>
    (await gql(KEYS.admin, `query($id: ID!) { channel(id: $id) { id kind endpoint buffer } }`, { id: DEMO_CHANNEL.id }))
      .channel;
  const sandboxState = async (endpoint: string) =>
    ((await (await fetch(`${endpoint}/_sandbox/state`)).json()) as { listings: Record<string, { quantity: number }> })
      .listings;
  const eventually = async (what: string, ok: () => boolean | Promise<boolean>) => {
    for (let i = 0; i < 300; i++) {
      if (await ok()) return;
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error(`never: ${what}\n${host?.output()}`);
  };
  const listsDemoCatalog = async (endpoint: string, stock: Record<string, number>) => {
    const want = Object.fromEntries(Object.entries(stock).map(([sku, n]) => [sku, demoListed(n)]));
    let got: Record<string, number> = {};
    await eventually('the demo catalog listed on the sandbox', async () => {
      got = Object.fromEntries(Object.entries(await sandboxState(endpoint)).map(([sku, l]) => [sku, l.quantity]));
      return JSON.stringify(got) === JSON.stringify({ ...got, ...want }) && Object.keys(want).every((k) => k in got);
    });
    expect(got).toEqual(want);
  };

  it('starts in development with the demo channel pointing at it; the pusher lists the catalog there and the admin view shows it', async () => {
    await start();
    const ch = await demoChannel();
    expect(ch).toMatchObject({ id: DEMO_CHANNEL.id, kind: 'SANDBOX', buffer: DEMO_CHANNEL.buffer });
    expect(ch.endpoint).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    const stock = Object.fromEntries(DEMO_CATALOG.map((p) => [p.sku, p.initialStock]));
    await listsDemoCatalog(ch.endpoint, stock);
    // a sale moves the listing on the sandbox
    const sku = DEMO_CATALOG.find((p) => p.initialStock >= 3)!.sku;
    const placed = await gql(
      KEYS.storefront,
      `mutation($i: PlaceOrderInput!) { placeOrder(input: $i) { order { status } } }`,
      {
        i: { idempotencyKey: 'mk-1', customerId: 'c1', lines: [{ sku, quantity: 2 }] },
      },
    );
    expect(placed.placeOrder.order.status).toBe('RESERVED');
    stock[sku]! -= 2;
    await listsDemoCatalog(ch.endpoint, stock);
    // the admin view's per-channel listing (with an admin key)
    let listed: any;
    await eventually('the admin view shows the acknowledged listing', async () => {
      listed = await (
        await fetch(`${host!.url}/admin/products/${sku}/channels`, {
          headers: { authorization: `Bearer ${KEYS.admin}` },
        })
      ).json();
      return listed.channels?.[0]?.pending === false && listed.channels[0].listed === demoListed(stock[sku]!);
    });
    expect(listed.channels).toEqual([
      {
        id: DEMO_CHANNEL.id,
        name: DEMO_CHANNEL.name,
        listed: demoListed(stock[sku]!),
        desired: demoListed(stock[sku]!),
        pending: false,
      },
    ]);

    // a restart: a new sandbox (empty) on another port; the channel follows it and every listing is pushed again
    await host!.stop();
    await start();
    const moved = await demoChannel();
    expect(moved.endpoint).not.toBe(ch.endpoint);
    await listsDemoCatalog(moved.endpoint, stock);
    expect((await tdb.db.query(`SELECT count(*)::int AS n FROM channels`)).rows[0].n).toBe(1);

    // MARKETPLACE_SANDBOX=off: nothing starts, the channel is left as it was
    await host!.stop();
    await start({ ...DEV, MARKETPLACE_SANDBOX: 'off' });
    expect((await demoChannel()).endpoint).toBe(moved.endpoint);
    expect(
      await fetch(`${moved.endpoint}/_sandbox/state`).then(
        () => 'answered',
        () => 'refused',
      ),
    ).toBe('refused');

    // another channel exists: the database's channels point elsewhere, no sandbox is started and the demo channel stays
    const other = await gql(
      KEYS.admin,
      `mutation($i: CreateChannelInput!) { createChannel(input: $i) { userErrors { code } } }`,
      {
        i: { id: 'elsewhere', name: 'A real one', kind: 'SANDBOX', endpoint: 'http://127.0.0.1:9/market' },
      },
    );
    expect(other.createChannel.userErrors).toEqual([]);
    await host!.stop();
    await start({ ...DEV, LOG_LEVEL: 'info' });
    expect((await demoChannel()).endpoint).toBe(moved.endpoint);
    // decided before the host listens (node/marketplace.ts), so it is in the output by the time it answers
    expect(host!.output()).toContain('marketplace sandbox not started: channels point elsewhere');
    expect(host!.output()).not.toContain('marketplace sandbox started in-process');
  }, 120_000); // three server starts and two rounds of rate-limited pushes: slow on a busy 2-core machine

  it('is the development default only, and production refuses it (exit 2, naming MARKETPLACE_SANDBOX)', () => {
    expect(loadConfig({ NODE_ENV: 'development' }).channels.marketplaceSandbox).toBe(true);
    expect(loadConfig({ NODE_ENV: 'development', MARKETPLACE_SANDBOX: 'off' }).channels.marketplaceSandbox).toBe(false);
    expect(loadConfig({ NODE_ENV: 'test' }).channels.marketplaceSandbox).toBe(false);
    expect(loadConfig({ NODE_ENV: 'test', MARKETPLACE_SANDBOX: 'in-process' }).channels.marketplaceSandbox).toBe(true);
    const r = runScript('node/start.ts', {
      NODE_ENV: 'production',
      MARKETPLACE_SANDBOX: 'in-process',
      DATABASE_URL: tdb.url,
      API_KEYS,
      PORT: '0',
    });
    expect(r.status).toBe(2);
    expect(r.stderr + r.stdout).toMatch(/MARKETPLACE_SANDBOX: in-process is a fake marketplace/);
  });
});
