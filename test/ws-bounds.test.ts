// graphql-ws bounded like HTTP, against the real server (a child process) over loopback: subscriptions only, a
// message size cap, subscriptions per socket, sockets per client, and memory that comes back after the sockets close.
import http from 'node:http';
import pino from 'pino';
import { getRequestListener } from '@hono/node-server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawnServer, type ServerProcess } from '../kit/server.js';
import { createTestDatabase } from './support/db.js';
import { openSocket, type RawSocket } from './support/ws-raw.js';
import { createApp } from '../app/app.js';
import { createMetrics } from '../common/metrics.js';
import { createLivePubSub } from '../subscriptions/pubsub.js';
import { attachGraphqlWs, textFrame } from '../subscriptions/graphql-ws.js';
import WebSocket, { WebSocketServer } from 'ws';
import { clientIpOf } from '../common/client-ip.js';
import { Redis } from 'ioredis';
import { connectRedis } from '../subscriptions/redis.js';
import { TOPICS_PER_COMMAND } from '../subscriptions/redis-topics.js';
import { REDIS_URL, redisAvailable, uniquePrefix } from './support/redis.js';
import { DEFAULTS } from '../kit/config-defaults.js';

const hasRedis = await redisAvailable();
const tdb = await createTestDatabase();
afterAll(() => tdb.drop());
const KEY = { a: 'ws_bounds_storefront_a_key', b: 'ws_bounds_storefront_b_key', admin: 'ws_bounds_admin_key_12345' };
const SOCKETS_PER_CLIENT = 20;
let srv: ServerProcess;
beforeAll(async () => {
  srv = await spawnServer({
    env: {
      DATABASE_URL: tdb.url,
      API_KEYS: `storefront:client-a:${KEY.a},storefront:client-b:${KEY.b},admin:ops:${KEY.admin}`,
      MAX_SOCKETS_PER_CLIENT: String(SOCKETS_PER_CLIENT),
      LASTUNIT_TEST_DIAGNOSTICS: 'on',
      WEB_CONCURRENCY: '1', // one process's heap, sockets and listeners are what is measured
    },
    // a heap figure after a full collection is the live set: what the server still holds, not garbage not yet reclaimed
    nodeArgs: ['--expose-gc'],
  });
});
afterAll(() => srv?.stop());

const AVAILABILITY = `subscription($skus: [String!]!) { availabilityChanged(skus: $skus) { sku available } }`;
type Diagnostics = {
  gcForced: boolean;
  heapUsedBytes: number;
  pubsub: { topics: number; listeners: number; streams: number; unacknowledged: number };
  graphqlWs: { sockets: number; subscriptions: number; sharedExecutions: number };
};
async function diagnostics(): Promise<Diagnostics> {
  for (let attempt = 1; ; attempt++) {
    try {
      // a fresh connection each time: a kept-alive one may have timed out while the server was busy collecting
      return (await (
        await fetch(`${srv.url}/__diagnostics`, { headers: { connection: 'close' } })
      ).json()) as Diagnostics;
    } catch (err) {
      if (attempt >= 3) throw err;
    }
  }
}
async function until(what: string, ok: (d: Diagnostics) => boolean, ms = 60_000): Promise<Diagnostics> {
  const deadline = Date.now() + ms;
  for (;;) {
    const d = await diagnostics();
    if (ok(d)) return d;
    if (Date.now() > deadline) throw new Error(`${what}: still ${JSON.stringify(d)}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}
const MB = 1024 * 1024;

describe('graphql-ws on the real server', () => {
  it('refuses queries and mutations with SUBSCRIPTIONS_ONLY and runs nothing', async () => {
    const s = openSocket(srv.url, KEY.a);
    await s.acked;
    s.subscribe('q', `{ product(sku: "X") { sku } }`);
    s.subscribe(
      'm',
      `mutation { placeOrder(input: { idempotencyKey: "ws-m", customerId: "c", lines: [{ sku: "X", quantity: 1 }] }) { order { id } } }`,
    );
    for (const id of ['q', 'm']) {
      const e = await s.answer(id);
      expect(e.type).toBe('error');
      expect(e.payload[0].extensions.code).toBe('SUBSCRIPTIONS_ONLY');
      expect(e.payload[0].message).toMatch(/only subscriptions.*POST \/graphql/);
    }
    expect((await tdb.db.query(`SELECT count(*)::int AS n FROM orders`)).rows[0].n).toBe(0);
    s.ws.close();
  });

  it("writes each event to every subscription of a socket under that subscription's own id, and none after its complete", async () => {
    const admin = async (query: string, variables: Record<string, unknown>) => {
      const r = await fetch(`${srv.url}/graphql`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${KEY.admin}` },
        body: JSON.stringify({ query, variables }),
      });
      const body = (await r.json()) as any;
      expect(body.errors).toBeUndefined();
      return body.data;
    };
    await admin(`mutation($i: CreateProductInput!) { createProduct(input: $i) { userErrors { code } } }`, {
      i: { sku: 'WS-IDS', name: 'ids', priceAmount: 100, currencyCode: 'USD', initialStock: 5 },
    });
    const s = openSocket(srv.url, KEY.a);
    const other = openSocket(srv.url, KEY.a);
    await Promise.all([s.acked, other.acked]);
    // ids a client may choose (graphql-ws's own are UUIDs): quotes, backslashes and non-ASCII are escaped in the frame
    const ids = ['plain', 'with "quotes" and \\ backslash', 'ünïcødé-✓'];
    const query = `subscription { availabilityChanged(skus: ["WS-IDS"]) { sku available version } }`;
    for (const id of ids) s.subscribe(id, query);
    other.subscribe('1', query);
    await until('four subscriptions, one shared execution', (d) => d.graphqlWs.subscriptions >= 4);
    const setStock = (available: number) =>
      admin(`mutation($i: SetStockInput!) { setStock(input: $i) { userErrors { code } } }`, {
        i: { sku: 'WS-IDS', available },
      });
    await setStock(4);
    for (const [sock, id] of [...ids.map((id) => [s, id] as const), [other, '1'] as const]) {
      const m = await sock.answer(id, ['next']);
      expect(m).toEqual({
        id,
        type: 'next',
        payload: { data: { availabilityChanged: expect.objectContaining({ sku: 'WS-IDS', available: 4 }) } },
      });
    }
    s.send({ id: ids[1], type: 'complete' });
    await until('the completed subscription is gone', (d) => d.graphqlWs.subscriptions === 3);
    await setStock(3);
    const threes = async (sock: RawSocket, id: string) => {
      await until(`${id} sees 3`, () =>
        sock.messages.some((m) => m.id === id && m.payload?.data?.availabilityChanged?.available === 3),
      );
    };
    await Promise.all([threes(s, ids[0]!), threes(s, ids[2]!), threes(other, '1')]);
    // the completed one got its first event and nothing after the complete
    expect(s.messages.filter((m) => m.id === ids[1]).map((m) => m.payload.data.availabilityChanged.available)).toEqual([
      4,
    ]);
    s.ws.close();
    other.ws.close();
  });

  it('closes the socket with 1009 on a message larger than MAX_BODY_BYTES, even before connection_init, without reading it', async () => {
    for (const init of [false, true]) {
      const s = openSocket(srv.url, KEY.a, { init });
      if (init) await s.acked;
      else await new Promise((r) => s.ws.once('open', r));
      s.ws.send(Buffer.alloc(20 * MB, 0x20));
      expect((await s.closed).code).toBe(1009);
    }
    expect(srv.output()).not.toMatch(/Internal error/); // a client's fault, not reported as the server's
  });

  it(`allows at most MAX_SUBSCRIPTIONS_PER_SOCKET (100) at once: the 101st is refused, and completing one frees a slot`, async () => {
    const s = openSocket(srv.url, KEY.a);
    await s.acked;
    for (let i = 0; i < 100; i++) s.subscribe(`s${i}`, AVAILABILITY, { skus: [`CAP-${i}`] });
    await until('100 subscriptions registered', (d) => d.graphqlWs.subscriptions >= 100);
    s.subscribe('s100', AVAILABILITY, { skus: ['CAP-100'] });
    const refused = await s.answer('s100');
    expect(refused.payload[0].extensions.code).toBe('TOO_MANY_SUBSCRIPTIONS');
    s.send({ id: 's0', type: 'complete' });
    await until('one completed', (d) => d.graphqlWs.subscriptions === 99);
    s.subscribe('s101', AVAILABILITY, { skus: ['CAP-101'] });
    await until('a new one in its place', (d) => d.graphqlWs.subscriptions === 100);
    expect(s.messages.filter((m) => m.type === 'error')).toHaveLength(1);
    s.ws.close();
    await until('all closed', (d) => d.graphqlWs.sockets === 0);
  });

  it(`allows at most MAX_SOCKETS_PER_CLIENT sockets per API client (4429 past it), counted per client, freed on close`, async () => {
    const sockets = Array.from({ length: SOCKETS_PER_CLIENT }, () => openSocket(srv.url, KEY.b));
    await Promise.all(sockets.map((s) => s.acked));
    const extra = openSocket(srv.url, KEY.b);
    expect(await extra.closed).toEqual({ code: 4429, reason: 'Too many sockets for this API client' });
    const other = openSocket(srv.url, KEY.a); // another client is not affected
    await other.acked;
    sockets[0]!.ws.close();
    await sockets[0]!.closed;
    await until('the closed one released', (d) => d.graphqlWs.sockets === SOCKETS_PER_CLIENT);
    const again = openSocket(srv.url, KEY.b);
    await again.acked;
    for (const s of [...sockets, other, again]) s.ws.close();
    await until('all closed', (d) => d.graphqlWs.sockets === 0);
  });

  it('returns heap and listeners to their baseline after 2,000 subscriptions x 100 SKUs are closed', async () => {
    const open = async (sockets: number, subsPerSocket: number, tag: string): Promise<RawSocket[]> => {
      const all = Array.from({ length: sockets }, () => openSocket(srv.url, KEY.a));
      await Promise.all(all.map((s) => s.acked));
      all.forEach((s, si) => {
        for (let i = 0; i < subsPerSocket; i++)
          s.subscribe(String(i), AVAILABILITY, {
            skus: Array.from({ length: 100 }, (_, j) => `${tag}${si}x${i}x${j}`),
          });
      });
      return all;
    };
    const closeAll = async (all: RawSocket[]) => {
      for (const s of all) s.ws.close();
      await Promise.all(all.map((s) => s.closed));
      // closed means Redis has answered the UNSUBSCRIBEs too (with REDIS_URL): until then the subscriber connection
      // rightly holds those topics (ioredis' subscription set and the commands in flight)
      const released = (d: Diagnostics) =>
        d.graphqlWs.sockets === 0 &&
        d.graphqlWs.subscriptions === 0 &&
        d.pubsub.listeners === 0 &&
        d.graphqlWs.sharedExecutions === 0 &&
        d.pubsub.unacknowledged === 0;
      return until('everything released', released);
    };
    // warm up the code paths once (JIT, caches), so the baseline is the steady state
    await closeAll(await open(2, 100, 'W'));
    const baseline = await diagnostics();
    expect(baseline.gcForced).toBe(true);

    const all = await open(SOCKETS_PER_CLIENT, 100, 'M'); // 20 sockets x 100 = 2,000 subscriptions, 200,000 (subscription, SKU) pairs
    const peak = await until(
      '2,000 subscriptions registered',
      (d) => d.graphqlWs.subscriptions === 2000 && d.pubsub.listeners === 200_000 && d.pubsub.unacknowledged === 0,
    );
    expect(peak.pubsub).toEqual({ topics: 200_000, listeners: 200_000, streams: 2000, unacknowledged: 0 });
    const grew = (peak.heapUsedBytes - baseline.heapUsedBytes) / MB;
    // bounded per pair: one Set entry per (subscription, SKU), not a repeater and an EventTarget listener each
    // (which held ~3.7 KB per pair: 2,000 x 100 took the heap up by ~730 MB)
    expect(grew).toBeGreaterThan(20);
    expect(grew).toBeLessThan(250);

    const after = await closeAll(all);
    const left = (after.heapUsedBytes - baseline.heapUsedBytes) / MB;
    console.log(
      `ws memory: baseline ${(baseline.heapUsedBytes / MB).toFixed(1)} MB, +${grew.toFixed(1)} MB with 2,000 x 100, +${left.toFixed(1)} MB after close`,
    );
    expect(left).toBeLessThan(8);
  }, 180_000);
});

describe('the frames the fan-out writes itself', () => {
  it('are WebSocket text frames a ws client reads whole, at every length encoding (7-bit, 16-bit, 64-bit)', async () => {
    const wss = new WebSocketServer({ host: '127.0.0.1', port: 0 });
    await new Promise<void>((r) => wss.once('listening', () => r()));
    const head = '{"id":"s-1","type":"next","payload":';
    // 0-125 bytes: the length in the second byte; up to 65,535: 16 bits; beyond: 64 bits (with multi-byte UTF-8)
    const results = [{ data: {} }, { data: { s: 'x'.repeat(200) } }, { data: { s: 'é€'.repeat(40_000) } }];
    wss.on('connection', (server) => {
      const raw = (server as unknown as { _socket: import('node:net').Socket })._socket;
      for (const r of results) raw.write(textFrame(head, Buffer.from(JSON.stringify(r))));
    });
    const client = new WebSocket(`ws://127.0.0.1:${(wss.address() as import('node:net').AddressInfo).port}`);
    try {
      const got: unknown[] = [];
      await new Promise<void>((resolve, reject) => {
        client.on('message', (data, isBinary) => {
          expect(isBinary).toBe(false);
          got.push(JSON.parse(String(data)));
          if (got.length === results.length) resolve();
        });
        client.on('error', reject);
        client.on('close', (code) => reject(new Error(`closed ${code} after ${got.length} messages`)));
      });
      expect(got).toEqual(results.map((payload) => ({ id: 's-1', type: 'next', payload })));
    } finally {
      client.terminate();
      await new Promise<void>((r) => wss.close(() => r()));
    }
  });
});

describe('graphql-ws sockets of a public key', () => {
  it('are counted per client address (MAX_SOCKETS_PER_IP): each browser is its own client', async () => {
    const keys = [{ role: 'public' as const, client: 'web', key: 'ws_bounds_public_key_1234' }];
    const { yoga, lookupCaller } = createApp({
      db: tdb.db,
      metrics: createMetrics(),
      keys,
      logger: pino({ level: 'silent' }),
      pubsub: createLivePubSub(),
      settings: DEFAULTS.orders,
      limits: DEFAULTS.limits,
    });
    const server = http.createServer(getRequestListener(() => new Response('not here', { status: 404 })));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    // the public role's subscription rights are not this test's concern: it lets the role connect, as the host will
    const ws = attachGraphqlWs(server, {
      yoga,
      lookupCaller,
      roles: ['public'],
      maxPayloadBytes: DEFAULTS.limits.maxBodyBytes,
      maxSubscriptionsPerSocket: DEFAULTS.live.sockets.maxSubscriptionsPerSocket,
      maxSocketsPerIp: 2,
      maxSocketsPerClient: 1, // not what counts for a public key
      clientIp: (req) =>
        clientIpOf({
          remoteAddress: req.socket.remoteAddress,
          forwardedFor: req.headers['x-forwarded-for']?.toString(),
          trustProxy: 1,
        }),
    });
    const url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
    try {
      const from = (ip: string) => openSocket(url, keys[0]!.key, { headers: { 'x-forwarded-for': ip } });
      const first = [from('203.0.113.7'), from('203.0.113.7'), from('198.51.100.1')];
      await Promise.all(first.map((s) => s.acked));
      expect(await from('203.0.113.7').closed).toEqual({ code: 4429, reason: 'Too many sockets from this address' });
      first[0]!.ws.close();
      await first[0]!.closed;
      await new Promise((r) => setTimeout(r, 50));
      const again = from('203.0.113.7');
      await again.acked;
      for (const s of [...first, again]) s.ws.close();
    } finally {
      await ws.dispose();
      server.close();
    }
  });
});

describe.skipIf(!hasRedis)('the live pubsub on Redis', () => {
  it(`subscribes a subscription's SKUs many topics per SUBSCRIBE / UNSUBSCRIBE (not one command per SKU), and still delivers`, async () => {
    const prefix = uniquePrefix('wsb');
    const redis = connectRedis(REDIS_URL, prefix, pino({ level: 'silent' }), createMetrics());
    // every command Redis runs with one of our topics, in the order it ran them
    const monitor = await new Redis(REDIS_URL).monitor();
    const seen: string[][] = [];
    monitor.on('monitor', (_time: string, args: string[]) => {
      if (args.some((a) => a.startsWith(prefix))) seen.push(args);
    });
    const pubsub = createLivePubSub({ redis });
    const settled = async (ok: (s: ReturnType<typeof pubsub.stats>) => boolean) => {
      while (!ok(pubsub.stats())) await new Promise((r) => setTimeout(r, 20));
    };
    // all that Redis ran before `marker`, as the monitor saw it (Redis runs commands one at a time)
    const upTo = async (marker: string) => {
      await redis.command.publish(`${prefix}${marker}`, '');
      while (!seen.some((a) => a[1] === `${prefix}${marker}`)) await new Promise((r) => setTimeout(r, 20));
      return seen.splice(0).filter((a) => a[0]!.toLowerCase() !== 'publish');
    };
    const SUBSCRIPTIONS = 100;
    const SKUS = 100; // 10,000 (subscription, SKU) pairs: 10,000 SUBSCRIBE and 10,000 UNSUBSCRIBE commands one per topic
    try {
      const streams = Array.from({ length: SUBSCRIPTIONS }, (_, i) =>
        pubsub
          .subscribeMany(
            'availability',
            Array.from({ length: SKUS }, (_, j) => `B${i}x${j}`),
          )
          [Symbol.asyncIterator](),
      );
      const first = streams.map((s) => s.next()); // a stream starts (subscribes) on its first read
      await settled((s) => s.listeners === SUBSCRIPTIONS * SKUS && s.unacknowledged === 0);
      const subscribed = await upTo('subscribed');
      expect(subscribed.every((a) => a[0]!.toLowerCase() === 'subscribe')).toBe(true);
      expect(new Set(subscribed.flatMap((a) => a.slice(1))).size).toBe(SUBSCRIPTIONS * SKUS);
      expect(subscribed.length).toBeLessThanOrEqual(SUBSCRIPTIONS);
      expect(Math.max(...subscribed.map((a) => a.length - 1))).toBeLessThanOrEqual(TOPICS_PER_COMMAND);

      // Redis delivers to the batched topics
      const event = { sku: 'B7x42', available: 3, soldOut: false, version: 9, updatedAt: new Date(0).toISOString() };
      await pubsub.publish('availability', 'B7x42', event);
      expect((await first[7]!).value).toEqual(event);

      // a topic dropped and taken again in the same turn costs no command, and stays subscribed
      const again = streams[3]!;
      await again.return?.();
      const taken = pubsub
        .subscribeMany(
          'availability',
          Array.from({ length: SKUS }, (_, j) => `B3x${j}`),
        )
        [Symbol.asyncIterator]();
      const next = taken.next();
      await settled((s) => s.unacknowledged === 0);
      expect(await upTo('taken-again')).toEqual([]);
      await pubsub.publish('availability', 'B3x5', { ...event, sku: 'B3x5' });
      expect((await next).value).toEqual({ ...event, sku: 'B3x5' });

      await Promise.all([...streams, taken].map((s) => s.return?.()));
      await settled((s) => s.listeners === 0 && s.topics === 0 && s.unacknowledged === 0);
      const unsubscribed = await upTo('unsubscribed');
      expect(unsubscribed.every((a) => a[0]!.toLowerCase() === 'unsubscribe')).toBe(true);
      expect(new Set(unsubscribed.flatMap((a) => a.slice(1))).size).toBe(SUBSCRIPTIONS * SKUS);
      expect(unsubscribed.length).toBeLessThanOrEqual(SUBSCRIPTIONS + 1);
      const numsub = (await redis.command.pubsub(
        'NUMSUB',
        `${prefix}availability:B7x42`,
        `${prefix}availability:B3x5`,
      )) as (string | number)[];
      expect(numsub.filter((_, i) => i % 2 === 1).map(Number)).toEqual([0, 0]);
    } finally {
      monitor.disconnect();
      await redis.close();
    }
  }, 60_000);
});
