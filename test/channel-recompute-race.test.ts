// A channel's rules changing (recompute_channel_listings, db/functions/090_channels.sql) while a claim of a bucketed
// SKU commits: the claim takes no lock the recompute waits for, so the recompute lists its statement's older figure,
// and the claim's own mark may reach the pusher (recompute_bundle_listings) before the new rules commit. Each step is
// a session of its own here, in the one order that went wrong; no host runs, so no pusher takes a mark out of turn.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from './support/db.js';

let tdb: TestDatabase;
beforeAll(async () => {
  tdb = await createTestDatabase({ max: 6 });
});
afterAll(() => tdb?.drop());

const listed = async (sku: string) =>
  (await tdb.db.query(`SELECT desired_quantity FROM channel_listings WHERE channel_id = 'race' AND sku = $1`, [sku]))
    .rows[0]?.desired_quantity as number | undefined;

describe('a rule change racing a bucketed claim', () => {
  it('ends listing what the claim left under the new rules, whatever the pusher did in between', async () => {
    await tdb.db.query(`INSERT INTO products (sku, name, price_amount, currency) VALUES ('RC-B', 'RC-B', 100, 'USD')`);
    await tdb.db.query(`INSERT INTO inventory (sku, available) VALUES ('RC-B', 10)`);
    await tdb.db.query(`SELECT set_stock_buckets('RC-B', 2)`);
    await tdb.db.query(`SELECT follow_unlisted_buckets()`);
    await tdb.db.transaction(async (tx) => {
      await tx.query(`INSERT INTO channels (id, name, kind, endpoint, webhook_secret)
                      VALUES ('race', 'race', 'SANDBOX', 'http://127.0.0.1:9/none', 'race-secret-0123456789')`);
      await tx.query('SELECT flag_inventory_listed()');
      await tx.query(`SELECT recompute_channel_listings('race')`);
    });
    await tdb.db.query('SELECT recompute_bundle_listings()'); // the pusher's pass: nothing stale before the race
    expect(await listed('RC-B')).toBe(10);

    const update = await tdb.db.pool.connect();
    const claim = await tdb.db.pool.connect();
    const pusher = await tdb.db.pool.connect();
    try {
      // updateChannel: buffer 1, its listings recomputed (10 on hand as it reads them: 9), not committed yet
      await update.query('BEGIN');
      await update.query(`UPDATE channels SET buffer = 1 WHERE id = 'race'`);
      await update.query(`SELECT recompute_channel_listings('race')`);
      // a claim of 5 from one bucket commits meanwhile, and marks the SKU for the pusher
      await claim.query(
        `UPDATE inventory_buckets SET available = available - 5, reserved = reserved + 5 WHERE sku = 'RC-B' AND bucket = 0`,
      );
      // the pusher takes that mark now, computes 5 left under the committed rules (buffer 0), and waits for the
      // listing row the rule change holds
      const pushed = pusher.query('SELECT recompute_bundle_listings()');
      let waited = false;
      for (let i = 0; i < 250 && !waited; i++) {
        const { rows } = await tdb.db.query(
          `SELECT count(*)::int AS n FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
            WHERE NOT l.granted AND a.datname = current_database() AND a.query LIKE '%recompute_bundle_listings%'`,
        );
        waited = rows[0].n > 0;
        if (!waited) await new Promise((r) => setTimeout(r, 20));
      }
      expect(waited).toBe(true);
      await update.query('COMMIT');
      await pushed;
    } finally {
      for (const c of [update, claim, pusher]) c.release();
    }
    // the pusher's next pass: what was marked when the rules committed is recomputed, 5 left less the buffer
    await tdb.db.query('SELECT recompute_bundle_listings()');
    expect(await listed('RC-B')).toBe(4);
  });
});
