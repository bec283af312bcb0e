import { afterAll, describe, expect, it } from 'vitest';
import net from 'node:net';
import { createTestDatabase } from './support/db.js';
import { createDb } from '../db/pool.js';
import { restock, setStock } from '../db/catalog-store.js';
import { placeOrder } from '../db/orders-store.js';
import { DEFAULTS } from '../kit/config-defaults.js';

// A connection that dies after the server answered a statement's commit: the statement committed, the client saw an
// error. db/pool.ts runs a single statement as BEGIN; SET LOCAL ...; statement; COMMIT, so the connection is cut at the
// first answer carrying COMMIT's CommandComplete after the statement was seen.
const tdb = await createTestDatabase();
const target = new URL(tdb.url);
let dropAfter: string | null = null;
const proxy = net.createServer((client) => {
  const server = net.connect(Number(target.port || 5432), target.hostname);
  let armed = false;
  client.on('data', (d) => {
    if (dropAfter && d.toString('latin1').includes(dropAfter)) armed = true;
    server.write(d);
  });
  server.on('data', (d) => {
    if (armed && d.includes('COMMIT\0', 0, 'latin1')) {
      dropAfter = null;
      client.destroy();
      server.destroy();
      return;
    }
    client.write(d);
  });
  for (const s of [client, server]) s.on('error', () => {});
  client.on('close', () => server.destroy());
  server.on('close', () => client.destroy());
});
await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', () => r()));
const viaProxy = new URL(tdb.url);
viaProxy.host = `127.0.0.1:${(proxy.address() as net.AddressInfo).port}`;
const retries: string[] = [];
const db = createDb({
  connectionString: viaProxy.toString(),
  max: DEFAULTS.database.poolSize,
  timeouts: DEFAULTS.database.timeouts,
  retry: { baseDelayMs: 1, onRetry: (r) => retries.push(r) },
});
afterAll(async () => {
  await db.end();
  proxy.close();
  await tdb.drop();
});
await tdb.db.query(`INSERT INTO products (sku, name, price_amount, currency) VALUES ('LC', 'x', 100, 'USD')`);
await tdb.db.query(`INSERT INTO inventory (sku, available) VALUES ('LC', 1)`);
const available = async () =>
  (await tdb.db.query(`SELECT available FROM inventory WHERE sku = 'LC'`)).rows[0].available as number;

describe('a connection lost after the commit', () => {
  it('never repeats a restock (it would add the units twice): the caller sees a fault, the units were added once', async () => {
    dropAfter = 'available = available + $2';
    await expect(restock(db, 'LC', 3)).rejects.toThrow();
    expect(await available()).toBe(4);
    const { rows } = await tdb.db.query(
      `SELECT count(*)::int AS n FROM outbox WHERE topic = 'availability' AND aggregate_key = 'LC'`,
    );
    expect(rows[0].n).toBe(1);
  });

  it('never repeats an absolute setStock', async () => {
    dropAfter = 'SET available = i.available + $2 - sku_available(';
    await expect(setStock(db, 'LC', 9, null)).rejects.toThrow();
    expect(await available()).toBe(9);
  });

  it('repeats placeOrder, which replays its key: one order, and the answer names it', async () => {
    retries.length = 0;
    dropAfter = 'SELECT place_order(';
    const r = await placeOrder(db, {
      clientId: 'c',
      customerId: 'u',
      key: 'lost-answer',
      requestHash: 'h',
      lines: [{ sku: 'LC', quantity: 2 }],
      holdTtlSeconds: 600,
      retentionHours: 24,
    });
    expect(retries.length).toBe(1);
    expect(r.kind).toBe('replayed');
    const { rows } = await tdb.db.query(`SELECT count(*)::int AS n FROM orders WHERE client_id = 'c'`);
    expect(rows[0].n).toBe(1);
    expect(await available()).toBe(7);
    expect('order' in r && r.order?.status).toBe('RESERVED');
  });
});
