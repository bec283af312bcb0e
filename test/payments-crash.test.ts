import { afterAll, describe, expect, it } from 'vitest';
import { createTestDatabase } from './support/db.js';
import { spawnServer, type ServerProcess } from '../kit/server.js';
import { startSandbox } from '../payments/sandbox-server.js';
import { createMetrics } from '../common/metrics.js';
import { sweepOnce } from '../orders/sweeper.js';
import { placeOrder } from '../db/orders-store.js';
import { makeHoldsOverdue } from '../kit/holds.js';

const SECRET = 'whsec_crash_test';
const KEY = 'storefront:crash_test_storefront_key';
const tdb = await createTestDatabase();
const sandbox = await startSandbox({ webhookSecret: SECRET, hangMs: 2_000 });
const servers: ServerProcess[] = [];
afterAll(async () => {
  for (const s of servers) await s.stop('SIGKILL');
  await sandbox.close();
  await tdb.drop();
});

/** `npm start` as a real child process on this file's database and the test's sandbox. */
async function startServer(extraEnv: Record<string, string>): Promise<ServerProcess> {
  const server = await spawnServer({
    env: {
      NODE_ENV: 'test',
      DATABASE_URL: tdb.url,
      API_KEYS: KEY,
      SANDBOX_PAYMENTS_URL: sandbox.url,
      PAYMENT_WEBHOOK_SECRET: SECRET,
      PAYMENT_TIMEOUT_MS: '500',
      PAYMENT_DEADLINE_SECONDS: '1',
      RECONCILE_INTERVAL_MS: '100',
      SWEEP_INTERVAL_MS: '100',
      LOG_LEVEL: 'silent',
      ...extraEnv,
    },
  });
  servers.push(server);
  return server;
}

const state = async (orderId: string) =>
  (
    await tdb.db.query(
      `SELECT o.status, r.state FROM orders o JOIN reservations r ON r.order_id = o.id WHERE o.id = $1`,
      [orderId],
    )
  ).rows[0];
const inventory = async (sku: string) =>
  (await tdb.db.query(`SELECT available, reserved, sold FROM inventory WHERE sku = $1`, [sku])).rows[0];
async function until<T>(fn: () => Promise<T | undefined | null | false>, ms = 15_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > end) throw new Error('condition not reached in time');
    await new Promise((r) => setTimeout(r, 50));
  }
}
async function product(sku: string, units: number) {
  await tdb.db.query(`INSERT INTO products (sku, name, price_amount, currency) VALUES ($1, $1, 500, 'USD')`, [sku]);
  await tdb.db.query(`INSERT INTO inventory (sku, available) VALUES ($1, $2)`, [sku, units]);
}

describe('a crash between the hold and the authorization', () => {
  it('SIGKILL after AWAITING_PAYMENT, before the processor heard of it: after restart the reconciler repeats the authorization by its key, once', async () => {
    await product('CRASH-1', 1);
    const first = await startServer({ LASTUNIT_FAULT_PAUSE_BEFORE_AUTHORIZE_MS: '60000' });
    const request = fetch(`${first.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${KEY.split(':')[1]}` },
      body: JSON.stringify({
        query: `mutation($input: PlaceOrderInput!) { placeOrder(input: $input) { order { id status } } }`,
        variables: {
          input: {
            idempotencyKey: 'crash-1',
            customerId: 'c1',
            lines: [{ sku: 'CRASH-1', quantity: 1 }],
            payment: { provider: 'sandbox', token: 'tok_approve' },
          },
        },
      }),
    }).catch(() => null); // the server dies under it
    const orderId = await until(
      async () =>
        (await tdb.db.query(`SELECT id FROM orders WHERE status = 'AWAITING_PAYMENT'`)).rows[0]?.id as
          | string
          | undefined,
    );
    await first.stop('SIGKILL');
    await request;
    expect(await inventory('CRASH-1')).toEqual({ available: 0, reserved: 1, sold: 0 }); // held, not stranded yet

    let c = (await (await fetch(`${sandbox.url}/_sandbox/charges/${orderId}`)).json()) as {
      requests: number;
      charges: number;
    };
    expect(c.requests).toBe(0); // never sent to the processor

    // After restart the attempt's outcome is unknown: the reconciler does not guess from "not found" (the request may
    // have reached the processor); it repeats the authorization with the same key and method, so the processor
    // answers the one payment for that key (here it makes it now) and the order is decided, never stranded.
    const second = await startServer({});
    await until(async () => (await state(orderId))?.status === 'CONFIRMED');
    expect(await state(orderId)).toEqual({ status: 'CONFIRMED', state: 'SOLD' });
    expect(await inventory('CRASH-1')).toEqual({ available: 0, reserved: 0, sold: 1 });
    c = (await (await fetch(`${sandbox.url}/_sandbox/charges/${orderId}`)).json()) as {
      requests: number;
      charges: number;
    };
    expect(c.charges).toBe(1);
    await second.stop();
  });

  it('a request that died after the hold but before the payment step: the sweeper expires the hold, a retry replays it', async () => {
    await product('CRASH-2', 1);
    // exactly what place_order leaves behind when the process dies right after it commits
    const r = await placeOrder(tdb.db, {
      clientId: 'client-x',
      customerId: 'c2',
      key: 'crash-2',
      requestHash: 'h',
      lines: [{ sku: 'CRASH-2', quantity: 1 }],
      holdTtlSeconds: 600,
      retentionHours: 24,
      payment: true,
      recoverySeconds: 1,
    });
    expect(r.kind).toBe('placed');
    const id = (r as { order: { id: string } }).order.id;
    const retryNow = await placeOrder(tdb.db, {
      clientId: 'client-x',
      customerId: 'c2',
      key: 'crash-2',
      requestHash: 'h',
      lines: [{ sku: 'CRASH-2', quantity: 1 }],
      holdTtlSeconds: 600,
      retentionHours: 24,
      payment: true,
      recoverySeconds: 1,
    });
    expect(retryNow.kind).toBe('in_progress');
    await makeHoldsOverdue(tdb.db, { orderIds: [id] });
    expect(await sweepOnce(tdb.db, createMetrics())).toBe(1);
    expect(await inventory('CRASH-2')).toEqual({ available: 1, reserved: 0, sold: 0 });
    const retryLater = await placeOrder(tdb.db, {
      clientId: 'client-x',
      customerId: 'c2',
      key: 'crash-2',
      requestHash: 'h',
      lines: [{ sku: 'CRASH-2', quantity: 1 }],
      holdTtlSeconds: 600,
      retentionHours: 24,
      payment: true,
      recoverySeconds: 1,
    });
    expect(retryLater).toMatchObject({ kind: 'replayed', order: { id, status: 'EXPIRED' } });
    const key = await tdb.db.query(`SELECT state FROM idempotency_keys WHERE key = 'crash-2'`);
    expect(key.rows).toEqual([{ state: 'DONE' }]); // finished: retention cleanup can delete it
  });
});
