// Retention (issue 9, item 7): the sweeper of the real server prunes published outbox rows, processed events older
// than PROCESSED_EVENTS_RETENTION_DAYS (at least 30: less is refused at start) and finished idempotency key rows,
// PROCESSING ones included once their order is final; it keeps everything still in use.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runScript, spawnServer, type ServerProcess } from '../kit/server.js';
import { KEYS } from '../kit/keys.js';
import { createTestDatabase } from './support/db.js';

const tdb = await createTestDatabase();
let srv: ServerProcess;
const env = { DATABASE_URL: tdb.url, API_KEYS: `storefront:${KEYS.storefront},admin:${KEYS.admin}` };
beforeAll(async () => {
  srv = await spawnServer({
    env: { ...env, RETENTION_INTERVAL_MS: '200', OUTBOX_RETENTION_HOURS: '1', PROCESSED_EVENTS_RETENTION_DAYS: '30' },
  });
});
afterAll(async () => {
  await srv?.stop();
  await tdb.drop();
});

async function gql(query: string, variables: Record<string, unknown>, key = KEYS.storefront) {
  const res = await fetch(srv.endpoint, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
    body: JSON.stringify({ query, variables }),
  });
  return ((await res.json()) as any).data;
}
const place = (idempotencyKey: string) =>
  gql(`mutation($i: PlaceOrderInput!) { placeOrder(input: $i) { order { id status } } }`, {
    i: { idempotencyKey, customerId: 'ret', lines: [{ sku: 'RET-1', quantity: 1 }] },
  }).then((d) => d.placeOrder.order as { id: string; status: string });
const q = (sql: string, params: unknown[] = []) => tdb.db.query(sql, params).then((r) => r.rows);

describe('the retention jobs', () => {
  it('prune what is finished and keep what is in use', async () => {
    await gql(
      `mutation { createProduct(input: { sku: "RET-1", name: "Kept", priceAmount: 100, currencyCode: "USD", initialStock: 10 }) { userErrors { code } } }`,
      {},
      KEYS.admin,
    );
    // idempotency keys past retention: one DONE, one PROCESSING of a final order, one PROCESSING of a live hold
    const done = await place('ret-done');
    const final = await place('ret-final');
    await gql(`mutation($i: ReleaseReservationInput!) { releaseReservation(input: $i) { order { status } } }`, {
      i: { orderId: final.id },
    });
    const live = await place('ret-live');
    // one statement: the sweeper runs every 200 ms, and between two updates it could prune ret-live while still DONE
    await q(
      `UPDATE idempotency_keys SET expires_at = now() - interval '1 hour',
              state = CASE WHEN key IN ('ret-final', 'ret-live') THEN 'PROCESSING' ELSE state END
        WHERE key IN ('ret-done', 'ret-final', 'ret-live')`,
    );
    const fresh = await place('ret-fresh'); // not past retention: kept whatever its state
    // outbox: published long ago (pruned), published just now and unpublished (kept)
    const [{ id: oldPublished }] = await q(
      `INSERT INTO outbox (topic, aggregate_key, payload, published_at) VALUES ('t', 'old', '{}', now() - interval '2 hours') RETURNING id`,
    );
    const [{ id: newPublished }] = await q(
      `INSERT INTO outbox (topic, aggregate_key, payload, published_at) VALUES ('t', 'new', '{}', now()) RETURNING id`,
    );
    const [{ id: unpublished }] = await q(
      `INSERT INTO outbox (topic, aggregate_key, payload, created_at, published_at) VALUES ('t', 'unpub', '{}', now() - interval '3 days', NULL) RETURNING id`,
    );
    // processed events: 31 days old (pruned), 29 days old (kept)
    await q(
      `INSERT INTO processed_events (source, event_id, processed_at) VALUES ('test', 'evt-31d', now() - interval '31 days'), ('test', 'evt-29d', now() - interval '29 days')`,
    );

    await expect
      .poll(async () => (await q(`SELECT count(*)::int AS n FROM processed_events WHERE event_id = 'evt-31d'`))[0].n, {
        timeout: 20_000,
      })
      .toBe(0);
    await expect
      .poll(async () => (await q(`SELECT count(*)::int AS n FROM outbox WHERE id = $1`, [oldPublished]))[0].n, {
        timeout: 20_000,
      })
      .toBe(0);
    const keys = (await q(`SELECT key FROM idempotency_keys WHERE key LIKE 'ret-%' ORDER BY key`)).map(
      (r: any) => r.key,
    );
    expect(keys).toEqual(['ret-fresh', 'ret-live']);
    expect(
      (await q(`SELECT id FROM outbox WHERE id IN ($1, $2) ORDER BY id`, [newPublished, unpublished])).length,
    ).toBe(2);
    expect(
      (await q(`SELECT event_id FROM processed_events WHERE source = 'test'`)).map((r: any) => r.event_id),
    ).toEqual(['evt-29d']);
    // the orders themselves stay: only the keys went
    expect(
      (
        await q(`SELECT count(*)::int AS n FROM orders WHERE id = ANY ($1::uuid[])`, [
          [done.id, final.id, live.id, fresh.id],
        ])
      )[0].n,
    ).toBe(4);
  });

  it('refuses to keep processed events less than 30 days (exit 2, naming the variable)', () => {
    const r = runScript('node/start.ts', { ...env, PROCESSED_EVENTS_RETENTION_DAYS: '29', PORT: '0' }, 30_000);
    expect(r.status).toBe(2);
    expect(`${r.stdout}${r.stderr}`).toMatch(/PROCESSED_EVENTS_RETENTION_DAYS: must be an integer >= 30/);
  });
});
