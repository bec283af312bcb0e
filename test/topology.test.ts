// Behind a transaction pooler (issue 23): Debian's PgBouncer in pool_mode=transaction in front of this file's database,
// two real host processes whose DATABASE_URL is the pooler and whose relay LISTENs on DATABASE_DIRECT_URL. The core
// races, one-key storms, paid orders and the relay pass through it; the migrator runs through it; a pool that sends
// session bounds as startup parameters (what db/pool.ts used to do) is refused by it; and a database the host cannot
// reach answers DATABASE_UNAVAILABLE (HTTP 503, Retry-After), /readyz 503 and /healthz 200, and the same request
// afterwards makes one order.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawnServer, type ServerProcess } from '../kit/server.js';
import { startPgBouncer, type PgBouncer } from '../kit/pgbouncer.js';
import { startTcpProxy, type TcpProxy } from '../kit/tcp-proxy.js';
import { startSandbox, type Sandbox } from '../payments/sandbox-server.js';
import { createDb } from '../db/pool.js';
import { migrate } from '../db/migrate.js';
import { DEFAULTS } from '../kit/config-defaults.js';
import { createTestDatabase, type TestDatabase } from './support/db.js';
import { CORE_API_KEYS, coreScenarios } from './support/core-scenarios.js';
import { KEYS, PLACE_ORDER } from './support/app.js';
import { SECRET } from './support/payments.js';

let tdb: TestDatabase;
let pb: PgBouncer;
let sandbox: Sandbox;
let servers: ServerProcess[] = [];
let pooled: string;
beforeAll(async () => {
  tdb = await createTestDatabase({ max: 10 });
  // its own PgBouncer in front of the server this file's database is on (whatever LASTUNIT_TEST_PGBOUNCER says)
  pb = await startPgBouncer(tdb.directUrl, { poolSize: 12 });
  pooled = pb.urlOf(tdb.directUrl);
  sandbox = await startSandbox({ webhookSecret: SECRET, hangMs: 3_000 });
  const env = {
    DATABASE_URL: pooled,
    DATABASE_DIRECT_URL: tdb.directUrl,
    API_KEYS: CORE_API_KEYS,
    DATABASE_POOL_SIZE: '10',
    RATE_LIMIT_BUYER_PER_WINDOW: '0',
    SANDBOX_PAYMENTS_URL: sandbox.url,
    PAYMENT_WEBHOOK_SECRET: SECRET,
    WEB_CONCURRENCY: '1', // one relay LISTEN per host is counted
  };
  servers = await Promise.all([
    spawnServer({ env: { ...env, CLAIM_BATCHING: 'off' } }),
    spawnServer({ env: { ...env, CLAIM_BATCHING: 'on', CLAIM_BATCHES_IN_FLIGHT: '2', RELAY: 'off' } }),
  ]);
  sandbox.configure({ webhookUrl: `${servers[0]!.url}/webhooks/payments/sandbox` });
}, 90_000);
afterAll(async () => {
  await Promise.all(servers.map((s) => s.stop()));
  await sandbox?.close();
  await pb?.stop();
  await tdb?.drop();
});

const core = () => coreScenarios({ endpoints: servers.map((s) => s.endpoint), db: tdb.db, sandboxUrl: sandbox.url });

describe('PgBouncer 1.18 in transaction mode in front of the database', () => {
  it('refuses the session bounds as startup parameters (the old pool), and takes db/pool.ts with its SET LOCAL bounds', async () => {
    const old = new pg.Client({ connectionString: pooled, statement_timeout: 30_000 } as pg.ClientConfig);
    await expect(old.connect()).rejects.toThrow(/unsupported startup parameter: statement_timeout/);
    const db = createDb({
      connectionString: pooled,
      max: 2,
      timeouts: { ...DEFAULTS.database.timeouts, lockMs: 1234 },
    });
    try {
      const one = await db.query(`SELECT current_setting('lock_timeout') AS l`);
      expect(one.rows[0].l).toBe('1234ms');
      const tx = await db.transaction(async (q) => (await q.query(`SELECT current_setting('lock_timeout') AS l`)).rows);
      expect(tx[0].l).toBe('1234ms');
      // nothing stays on the server connection for the next client of the pooler
      const other = new pg.Client({ connectionString: pooled });
      await other.connect();
      expect((await other.query(`SELECT current_setting('lock_timeout') AS l`)).rows[0].l).toBe('0');
      await other.end();
    } finally {
      await db.end();
    }
  });

  it('migrates a new database through the pooler, two migrators at once (transaction-scoped advisory lock)', async () => {
    const admin = new pg.Client({ connectionString: tdb.directUrl });
    await admin.connect();
    const name = `${tdb.name}_m`;
    await admin.query(`CREATE DATABASE ${name}`);
    try {
      const url = new URL(pooled);
      url.pathname = `/${name}`;
      const dbs = [0, 1].map(() =>
        createDb({ connectionString: url.toString(), max: 1, timeouts: DEFAULTS.database.timeouts }),
      );
      const applied = await Promise.all(dbs.map((db) => migrate(db)));
      expect(applied.map((a) => a.length > 0).sort()).toEqual([false, true]);
      await Promise.all(dbs.map((db) => db.end()));
    } finally {
      await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await admin.end();
    }
  });

  it('gives the last unit to exactly one of 200 buyers over both processes', async () => {
    await core().lastUnit('PB-LAST');
  });

  it('never hands out more than 100 units to 300 buyers of 1 to 3', async () => {
    await core().hundredUnits('PB-100');
  });

  it('makes one order of 40 requests with one key sent to both processes at once', async () => {
    await core().oneKey('PB-TWINS');
  });

  it('confirms 12 paid orders of 30 buyers, one net charge each at the processor', async () => {
    await core().payments('PB-PAY');
  });

  it('drains the outbox, the relay LISTENing on the direct URL and never through the pooler', async () => {
    await core().outboxDrains();
    const { rows } = await tdb.db.query(
      `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'lastunit-relay-listen'`,
    );
    expect(rows[0].n).toBe(1);
    // (the migration test's database is dropped WITH (FORCE) under the pooler: its lines are not this database's)
    const mine = (await pb.log()).split('\n').filter((l) => l.includes(`${tdb.name}/`));
    expect(mine.filter((l) => /not linked|unsupported startup parameter/.test(l))).toEqual([]);
  });
});

describe('a database the host cannot reach', () => {
  let ep: TcpProxy;
  let srv: ServerProcess;
  beforeAll(async () => {
    ep = await startTcpProxy({ host: '127.0.0.1', port: pb.port });
    const url = new URL(pooled);
    url.host = `127.0.0.1:${ep.port}`;
    srv = await spawnServer({
      env: { DATABASE_URL: url.toString(), API_KEYS: CORE_API_KEYS, RELAY: 'off', DATABASE_CONNECT_TIMEOUT_MS: '1000' },
    });
  }, 60_000);
  afterAll(async () => {
    await srv?.stop();
    await ep?.close();
  });

  it('answers DATABASE_UNAVAILABLE with 503 and Retry-After, /readyz 503, /healthz 200; the same request then makes one order', async () => {
    await core().lastUnit('PB-DOWN-WARM'); // a product to buy and warm connections
    const send = () =>
      fetch(srv.endpoint, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${KEYS.storefront}` },
        body: JSON.stringify({
          query: PLACE_ORDER,
          variables: {
            input: { idempotencyKey: 'down-1', customerId: 'down', lines: [{ sku: 'PB-DOWN', quantity: 1 }] },
          },
        }),
      });
    const admin = await fetch(srv.endpoint, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${KEYS.admin}` },
      body: JSON.stringify({
        query: `mutation { createProduct(input: { sku: "PB-DOWN", name: "x", priceAmount: 100, currencyCode: "USD", initialStock: 3 }) { userErrors { code } } }`,
      }),
    });
    expect(((await admin.json()) as any).data.createProduct.userErrors).toEqual([]);
    expect((await fetch(`${srv.url}/readyz`)).status).toBe(200);

    ep.cut();
    const res = await send();
    const body = (await res.json()) as any;
    expect(res.status).toBe(503);
    expect(res.headers.get('retry-after')).toBe('1');
    expect(body.errors).toEqual([
      expect.objectContaining({
        extensions: expect.objectContaining({ code: 'DATABASE_UNAVAILABLE', retryable: true }),
      }),
    ]);
    const ready = await fetch(`${srv.url}/readyz`);
    expect(ready.status).toBe(503);
    expect((await fetch(`${srv.url}/healthz`)).status).toBe(200);

    ep.resume();
    const again = (await (await send()).json()) as any;
    expect(again.data.placeOrder.order.status).toBe('RESERVED');
    const third = (await (await send()).json()) as any;
    expect(third.data.placeOrder).toMatchObject({ replayed: true, order: { id: again.data.placeOrder.order.id } });
    const { rows } = await tdb.db.query(`SELECT count(*)::int AS n FROM orders WHERE customer_id = 'down'`);
    expect(rows[0].n).toBe(1);
    expect((await fetch(`${srv.url}/readyz`)).status).toBe(200);
  });
});
