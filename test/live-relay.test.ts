import { describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import pg from 'pg';
import { startTestApp, KEYS, PLACE_ORDER } from './support/app.js';
import { spawnServer } from '../kit/server.js';
import { REDIS_URL, redisAvailable, uniquePrefix } from './support/redis.js';
import { createLivePubSub, type AvailabilityEvent } from '../subscriptions/pubsub.js';
import { relayOnce, startRelay } from '../subscriptions/relay.js';
import { countUnpublished } from '../db/outbox-store.js';
import { sweepOnce } from '../orders/sweeper.js';
import { makeHoldsOverdue } from '../kit/holds.js';
import { DEFAULTS } from '../kit/config-defaults.js';

const hasRedis = await redisAvailable();
const t = await startTestApp({ poolSize: 12 });

/** Collects what a pubsub delivers on one topic key. */
function listen<T>(iter: AsyncIterable<T>) {
  const got: T[] = [];
  void (async () => {
    for await (const e of iter) got.push(e);
  })();
  return got;
}
const tick = () => new Promise((r) => setTimeout(r, 20));
/** One drain with the defaults' batch size and lease, or what `over` sets (a smaller batch, a test hook). */
const drain = (pubsub: ReturnType<typeof createLivePubSub>, over: Partial<Parameters<typeof relayOnce>[0]> = {}) =>
  relayOnce({
    db: t.db,
    pubsub,
    metrics: t.metrics,
    batchSize: DEFAULTS.live.relayBatchSize,
    leaseMs: DEFAULTS.live.relayLeaseMs,
    ...over,
  });
const insertSynthetic = (n: number, key: string) =>
  t.db.query(
    `INSERT INTO outbox (topic, aggregate_key, payload)
     SELECT 'availability', $2, jsonb_build_object('sku', $2::text, 'available', g, 'soldOut', false, 'version', g, 'updatedAt', now())
       FROM generate_series(1, $1) g`,
    [n, key],
  );

describe('the outbox relay', () => {
  it('publishes every stock and order transition once, versions growing, and marks every row', async () => {
    const pubsub = createLivePubSub();
    const relay = () => drain(pubsub);
    await relay(); // whatever earlier setup wrote
    await t.product('REL-A', 2);
    const avail = listen(pubsub.subscribe('availability', 'REL-A'));
    const { order } = await t.placeOrder({ idempotencyKey: 'rel-a1', lines: [{ sku: 'REL-A', quantity: 1 }] });
    const orderEvents = listen(pubsub.subscribe('order_status', order!.id));
    await t.release(order!.id);
    await t.gql(`mutation { restock(input: { sku: "REL-A", quantity: 3 }) { userErrors { code } } }`, {}, KEYS.admin);
    await t.gql(`mutation { setStock(input: { sku: "REL-A", available: 4 }) { userErrors { code } } }`, {}, KEYS.admin);
    const second = await t.placeOrder({ idempotencyKey: 'rel-a2', lines: [{ sku: 'REL-A', quantity: 4 }] });
    await makeHoldsOverdue(t.db, { orderIds: [second.order!.id] });
    await sweepOnce(t.db, t.metrics);
    await tick();
    expect(await relay()).toBeGreaterThanOrEqual(8);
    await tick();
    expect(avail.map((e) => [e.available, e.version])).toEqual([
      [1, 2],
      [2, 3],
      [5, 4],
      [4, 5],
      [0, 6],
      [4, 7],
    ]);
    expect(avail.map((e) => e.soldOut)).toEqual([false, false, false, false, true, false]);
    // one event per transition after the placement (its first status is not relayed: nobody can watch an order whose
    // id the placing answer has not given out yet); the order it carries is read when relayed
    expect(orderEvents.map((e) => [e.status, (e.order as any).status])).toEqual([['CANCELLED', 'CANCELLED']]);
    expect(await countUnpublished(t.db)).toBe(0);
  });

  it('NOTIFYs after a write only from a host without a relay of its own (its own LISTEN would only drain again)', async () => {
    const listener = new pg.Client({ connectionString: t.dbDirectUrl }); // LISTEN: not through a transaction pooler
    await listener.connect();
    const heard: string[] = [];
    listener.on('notification', (n) => heard.push(n.channel));
    await listener.query('LISTEN lastunit_outbox');
    const env = {
      DATABASE_URL: t.dbUrl,
      API_KEYS: `storefront:${KEYS.storefront},admin:${KEYS.admin}`,
      RELAY_POLL_MS: '60000',
    };
    const [own, none] = await Promise.all([spawnServer({ env }), spawnServer({ env: { ...env, RELAY: 'off' } })]);
    try {
      await t.product('NOTIFY-1', 10);
      const place = async (host: typeof own, key: string) => {
        const res = await fetch(host.endpoint, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${KEYS.storefront}` },
          body: JSON.stringify({
            query: PLACE_ORDER,
            variables: { input: { idempotencyKey: key, customerId: key, lines: [{ sku: 'NOTIFY-1', quantity: 1 }] } },
          }),
        });
        expect((await res.json()).data.placeOrder.order.status).toBe('RESERVED');
      };
      await place(own, 'notify-own');
      // its own relay published the availability event at once, and nobody was told by NOTIFY
      while ((await countUnpublished(t.db)) > 0) await tick();
      await new Promise((r) => setTimeout(r, 300));
      expect(heard).toEqual([]);
      await place(none, 'notify-none');
      const deadline = Date.now() + 5000;
      while (heard.length === 0 && Date.now() < deadline) await tick();
      expect(heard).toEqual(['lastunit_outbox']);
    } finally {
      await Promise.all([own.stop(), none.stop()]);
      await listener.end();
    }
  });

  it('is woken by a write of its own process at once: no NOTIFY and no poll before the rows are read', async () => {
    const pubsub = createLivePubSub();
    // no LISTEN connection and a poll that never comes within the test: only wake() can start a drain
    const stop = startRelay({
      db: t.db,
      pubsub,
      metrics: t.metrics,
      batchSize: 10,
      leaseMs: DEFAULTS.live.relayLeaseMs,
      pollMs: 600_000,
    });
    try {
      while ((await countUnpublished(t.db)) > 0) await tick(); // the drain at start
      const got = listen(pubsub.subscribe('availability', 'REL-WAKE'));
      await insertSynthetic(3, 'REL-WAKE');
      await new Promise((r) => setTimeout(r, 300));
      expect(got).toEqual([]); // nothing read them yet
      stop.wake();
      const deadline = Date.now() + 5_000;
      while (got.length < 3 && Date.now() < deadline) await tick();
      expect(got.map((e) => e.version)).toEqual([1, 2, 3]);
      // published, then marked in the same drain
      while ((await countUnpublished(t.db)) > 0 && Date.now() < deadline) await tick();
      expect(await countUnpublished(t.db)).toBe(0);
    } finally {
      await stop();
    }
  });

  it('loses nothing when it crashes between publishing and marking: the batch is claimed and published again', async () => {
    const pubsub = createLivePubSub();
    await drain(pubsub);
    await insertSynthetic(250, 'CRASH');
    const got = listen<AvailabilityEvent>(pubsub.subscribe('availability', 'CRASH'));
    const crash = drain(pubsub, {
      batchSize: 100,
      afterPublish: () => {
        throw new Error('crash before mark');
      },
    });
    await expect(crash).rejects.toThrow('crash before mark');
    expect(await countUnpublished(t.db)).toBe(250); // nothing marked, and the failed batch's lease given back
    expect(await drain(pubsub, { batchSize: 100 })).toBe(250);
    await tick();
    expect(await countUnpublished(t.db)).toBe(0);
    expect(new Set(got.map((e) => e.version)).size).toBe(250); // all of them; the first 100 twice (at least once)
    expect(got).toHaveLength(350);
  });

  it('holds no transaction open while it publishes: no row lock, no session idle in a transaction', async () => {
    const pubsub = createLivePubSub();
    await drain(pubsub);
    await insertSynthetic(20, 'OPEN');
    const seen: { locked: number; idleInTransaction: number; leased: number }[] = [];
    const n = await drain(pubsub, {
      batchSize: 100, // what another session sees while the batch is being published (here, where Redis would be called)
      afterPublish: async (events) => {
        const ids = events.map((e) => e.id);
        const c = await t.db.pool.connect();
        try {
          // NOWAIT: a row lock held by the relay would fail this at once (55P03)
          const locked = await c.query(`SELECT id FROM outbox WHERE id = ANY($1::bigint[]) FOR UPDATE NOWAIT`, [ids]);
          const idle = await c.query(
            `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND state LIKE 'idle in transaction%'`,
          );
          const leased = await c.query(
            `SELECT count(*)::int AS n FROM outbox WHERE id = ANY($1::bigint[]) AND lease_until > clock_timestamp() AND published_at IS NULL`,
            [ids],
          );
          seen.push({ locked: locked.rowCount ?? 0, idleInTransaction: idle.rows[0].n, leased: leased.rows[0].n });
        } finally {
          c.release();
        }
      },
    });
    expect(n).toBe(20);
    expect(seen).toEqual([{ locked: 20, idleInTransaction: 0, leased: 20 }]);
    expect(await countUnpublished(t.db)).toBe(0);
  });

  it('a relay that dies holding a lease delays its rows by the lease only: any relay claims them once it ends', async () => {
    const pubsub = createLivePubSub();
    await drain(pubsub);
    await insertSynthetic(30, 'LEASE');
    const got = listen<AvailabilityEvent>(pubsub.subscribe('availability', 'LEASE'));
    // a relay claims the batch and dies before publishing it: the lease is all it leaves
    const claimed = await t.db.query(`SELECT id FROM claim_outbox_batch(p_limit => 100, p_lease_ms => 800)`);
    expect(claimed.rowCount).toBe(30);
    expect(await drain(pubsub, { leaseMs: 800 })).toBe(0); // leased: nobody else takes them meanwhile
    await new Promise((r) => setTimeout(r, 900));
    expect(await drain(pubsub, { leaseMs: 800 })).toBe(30);
    await tick();
    expect(await countUnpublished(t.db)).toBe(0);
    expect(got.map((e) => e.version)).toEqual(Array.from({ length: 30 }, (_, i) => i + 1));
  });

  it('shares the work between several relays (SKIP LOCKED): every row published, none twice', async () => {
    const pubsub = createLivePubSub();
    await drain(pubsub);
    await insertSynthetic(2000, 'MANY');
    const got = listen<AvailabilityEvent>(pubsub.subscribe('availability', 'MANY'));
    const counts = await Promise.all(Array.from({ length: 4 }, () => drain(pubsub, { batchSize: 50 })));
    await tick();
    expect(counts.reduce((s, n) => s + n, 0)).toBe(2000);
    expect(got).toHaveLength(2000);
    expect(new Set(got.map((e) => e.version)).size).toBe(2000);
  });

  it.skipIf(!hasRedis)(
    'publishes every row when a relay process is killed (SIGKILL) mid-drain and another is started',
    async () => {
      const prefix = uniquePrefix('relay');
      const sub = new Redis(REDIS_URL);
      const seen = new Set<number>();
      sub.on('message', (_ch, msg) => seen.add(JSON.parse(msg).version));
      await sub.subscribe(`${prefix}availability:KILL`);
      await drain(createLivePubSub());
      await insertSynthetic(5000, 'KILL');
      const env = {
        DATABASE_URL: t.dbUrl,
        REDIS_URL,
        REDIS_KEY_PREFIX: prefix,
        RELAY_BATCH_SIZE: '50',
        RELAY_POLL_MS: '100',
        RELAY_LEASE_MS: '500', // the killed relay's last batch is claimed again half a second later
      };
      const first = await spawnServer({ env, script: 'node/relay-cli.ts' });
      while ((await countUnpublished(t.db)) > 4500) await new Promise((r) => setTimeout(r, 10));
      await first.stop('SIGKILL');
      const left = await countUnpublished(t.db);
      expect(left).toBeGreaterThan(0); // killed mid-drain
      const second = await spawnServer({ env, script: 'node/relay-cli.ts' });
      const deadline = Date.now() + 60_000;
      while ((await countUnpublished(t.db)) > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
      await second.stop();
      await new Promise((r) => setTimeout(r, 200));
      sub.disconnect();
      expect(await countUnpublished(t.db)).toBe(0);
      expect(seen.size).toBe(5000);
    },
  );
});
