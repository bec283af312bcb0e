// The drop and waitlist invariants (docs/architecture.md, I17 and I18), each held by a constraint or a conditional
// write in PostgreSQL: a direct write that would break one is refused, and racing callers of the SQL functions
// themselves cannot break the conditional writes.
import { describe, expect, it } from 'vitest';
import { startTestApp } from './support/app.js';

const t = await startTestApp();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const TOKEN = 'a'.repeat(64);

/** A QUEUE drop of `sku` opening in `opensIn` seconds, as createDrop writes it; returns its id. */
async function queueDrop(sku: string, opensIn: number, claimSeconds = 60) {
  const { rows } = await t.db.query(
    `SELECT create_drop(p_client_id => 'ops', p_key => NULL, p_request_hash => 'h', p_sku => $1, p_mode => 'QUEUE',
       p_opens_at => now() + make_interval(secs => $2), p_closes_at => now() + interval '1 hour',
       p_claim_seconds => $3, p_max_per_customer => 1) AS r`,
    [sku, opensIn, claimSeconds],
  );
  return rows[0].r.drop.id as string;
}
const enter = (dropId: string, customer: string) =>
  t.db.query(
    `SELECT enter_drop(p_drop_id => $1, p_client_id => 'shop', p_customer_id => $2, p_key => $2, p_token_hash => $3,
       p_address => NULL, p_max_per_address => 3) AS r`,
    [dropId, customer, TOKEN],
  );
const placeSql = (customer: string, sku: string, key: string) =>
  t.db
    .query(
      `SELECT place_order(p_client_id => 'shop', p_customer_id => $1, p_key => $2, p_request_hash => 'h',
         p_lines => jsonb_build_array(jsonb_build_object('sku', $3::text, 'quantity', 1)), p_hold_ttl_seconds => 60,
         p_retention_hours => 1) AS r`,
      [customer, key, sku],
    )
    .then((r) => r.rows[0].r as { kind: string; order: { status: string; rejection: { code: string } | null } });

describe('I17: a drop admits no entry twice, and never more than it can sell', () => {
  it('refuses a second entry of one customer in one drop, and a second drop governing a SKU', async () => {
    await t.product('INV-1', 3);
    const id = await queueDrop('INV-1', 60);
    const insert = `INSERT INTO drop_entries (id, drop_id, client_id, customer_id, idempotency_key, token_hash, state, early)
                    VALUES (gen_random_uuid(), $1, 'shop', 'same', $2, '${TOKEN}', 'WAITING', true)`;
    await t.db.query(insert, [id, 'k1']);
    await expect(t.db.query(insert, [id, 'k2'])).rejects.toMatchObject({ code: '23505' });
    await expect(
      t.db.query(
        `INSERT INTO drops (id, client_id, sku, mode, opens_at, closes_at, claim_seconds, max_per_customer, seed, seed_commitment)
         SELECT gen_random_uuid(), client_id, sku, mode, opens_at, closes_at, claim_seconds, max_per_customer, seed, seed_commitment
           FROM drops WHERE id = $1`,
        [id],
      ),
    ).rejects.toMatchObject({ code: '23505', constraint: 'drops_governing_sku_idx' });
  });

  it('refuses an admission counter below zero, an admitted entry without a deadline, an ordered one without its order', async () => {
    await t.product('INV-2', 3);
    const id = await queueDrop('INV-2', 60);
    await enter(id, 'x');
    await expect(t.db.query(`UPDATE drops SET admitted = -1 WHERE id = $1`, [id])).rejects.toMatchObject({
      code: '23514',
    });
    await expect(
      t.db.query(`UPDATE drop_entries SET state = 'ADMITTED' WHERE drop_id = $1`, [id]),
    ).rejects.toMatchObject({
      code: '23514',
    });
    await expect(
      t.db.query(`UPDATE drop_entries SET state = 'ORDERED' WHERE drop_id = $1`, [id]),
    ).rejects.toMatchObject({
      code: '23514',
    });
  });

  it('ten sweepers advancing one drop at once admit exactly as many entries as it can sell', async () => {
    await t.product('INV-3', 3);
    const id = await queueDrop('INV-3', 1);
    for (let i = 0; i < 40; i++) await enter(id, `e${i}`);
    await sleep(1100);
    await Promise.all(Array.from({ length: 10 }, () => t.db.query(`SELECT advance_drop(p_drop_id => $1)`, [id])));
    const { rows } = await t.db.query(
      `SELECT d.admitted, (SELECT count(*)::int FROM drop_entries WHERE drop_id = d.id AND state = 'ADMITTED') AS entries,
              (SELECT count(DISTINCT place)::int FROM drop_entries WHERE drop_id = d.id) AS places
         FROM drops d WHERE d.id = $1`,
      [id],
    );
    expect(rows[0]).toEqual({ admitted: 3, entries: 3, places: 40 });
  });

  it('ten orders of one admitted customer at once: one is placed, the other nine claim nothing', async () => {
    await t.product('INV-4', 2);
    const id = await queueDrop('INV-4', 1);
    await enter(id, 'buyer');
    await sleep(1100);
    await t.db.query(`SELECT advance_drop(p_drop_id => $1)`, [id]);
    const answers = await Promise.all(Array.from({ length: 10 }, (_, i) => placeSql('buyer', 'INV-4', `k${i}`)));
    const outcomes = answers.map((a) => a.order.rejection?.code ?? a.order.status).sort();
    expect(outcomes).toEqual(['RESERVED', ...Array(9).fill('DROP_NOT_ADMITTED')].sort());
    expect(await t.inventory('INV-4')).toEqual({ available: 1, reserved: 1, sold: 0 });
  });
});

describe('I18: a returned unit goes to at most one waitlist entry', () => {
  it('refuses a second waiting entry of one customer for a SKU, and two entries offered one order', async () => {
    await t.product('INV-5', 0);
    const join = (customer: string, key: string) =>
      t.db.query(
        `SELECT join_waitlist(p_client_id => 'shop', p_customer_id => $1, p_counted_customer => $1, p_sku => 'INV-5',
           p_quantity => 1, p_key => $2, p_token_hash => $3, p_claim_seconds => 60) AS r`,
        [customer, key, TOKEN],
      );
    expect((await join('w1', 'k1')).rows[0].r.kind).toBe('joined');
    expect((await join('w1', 'k2')).rows[0].r.kind).toBe('already_entered');
    await expect(
      t.db.query(
        `INSERT INTO waitlist_entries (id, client_id, customer_id, counted_customer, sku, quantity, idempotency_key, token_hash, claim_seconds, state)
         VALUES (gen_random_uuid(), 'shop', 'w1', 'w1', 'INV-5', 1, 'k3', '${TOKEN}', 60, 'WAITING')`,
      ),
    ).rejects.toMatchObject({ code: '23505', constraint: 'waitlist_one_waiting_idx' });
    expect((await join('w2', 'k1')).rows[0].r.kind).toBe('joined');
    await t.db.query(`UPDATE inventory SET available = 1 WHERE sku = 'INV-5'`); // a stock-take: the head is served
    const { rows } = await t.db.query(`SELECT order_id FROM waitlist_entries WHERE state = 'OFFERED'`);
    expect(rows).toHaveLength(1);
    await expect(
      t.db.query(`UPDATE waitlist_entries SET state = 'OFFERED', order_id = $1 WHERE customer_id = 'w2'`, [
        rows[0].order_id,
      ]),
    ).rejects.toMatchObject({ code: '23505' });
    expect(await t.inventory('INV-5')).toEqual({ available: 0, reserved: 1, sold: 0 });
  });
});
