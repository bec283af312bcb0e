// After each scenario, what the database says happened: the client's counts are only claims, these are the facts.
import type pg from 'pg';

export type InventoryRow = { available: number; reserved: number; sold: number };

export type LastunitFacts = {
  inventory: InventoryRow;
  /** orders (any status) with a line for the SKU */
  orders: number;
  reservedOrders: number;
  rejectedOrders: number;
  /** idempotency key rows of this scenario's keys */
  keyRows: number;
  /** orders not referenced by any key row */
  orphanOrders: number;
  heldReservations: number;
  heldUnits: number;
};

/** The SKU's figures: its row's, plus its stock buckets' when it has some (sku_figures, db/functions/012_sku-figures.sql). */
async function inventory(pool: pg.Pool | pg.PoolClient, sku: string): Promise<InventoryRow> {
  const { rows } = await pool.query<InventoryRow>('SELECT available, reserved, sold FROM sku_figures(p_sku => $1)', [
    sku,
  ]);
  if (!rows[0]) throw new Error(`no inventory row for ${sku}`);
  return rows[0];
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Waits until no more orders for `sku` are being committed: a timed HTTP run stops with requests still in flight,
 * and the server finishes them after the client has stopped counting. Bounded (about 10 s).
 */
export async function waitForQuiet(pool: pg.Pool, sku: string): Promise<void> {
  const count = async () =>
    (await pool.query('SELECT count(*)::int AS n FROM order_lines WHERE sku = $1', [sku])).rows[0].n as number;
  let last = await count();
  for (let i = 0; i < 40; i++) {
    await sleep(250);
    const now = await count();
    if (now === last) return;
    last = now;
  }
}

/**
 * Everything read in one REPEATABLE READ snapshot, so the figures agree with each other; keys are those starting with
 * `keyPrefix`. Orphans by one hash join (a correlated NOT EXISTS per order ran past the statement timeout at 20,000+ orders).
 */
export async function lastunitFacts(pool: pg.Pool, sku: string, keyPrefix: string): Promise<LastunitFacts> {
  const c = await pool.connect();
  try {
    await c.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
    const orders = await c.query(
      `SELECT count(*)::int AS n,
              count(*) FILTER (WHERE o.status = 'RESERVED')::int AS reserved,
              count(*) FILTER (WHERE o.status = 'REJECTED')::int AS rejected,
              count(*) FILTER (WHERE k.order_id IS NULL)::int AS orphans
         FROM orders o
         LEFT JOIN (SELECT DISTINCT order_id FROM idempotency_keys WHERE order_id IS NOT NULL) k ON k.order_id = o.id
        WHERE o.id IN (SELECT order_id FROM order_lines WHERE sku = $1)`,
      [sku],
    );
    const keys = await c.query(`SELECT count(*)::int AS n FROM idempotency_keys WHERE starts_with(key, $1)`, [
      keyPrefix,
    ]);
    const held = await c.query(
      `SELECT count(*)::int AS n, coalesce(sum(quantity), 0)::int AS q FROM reservations WHERE sku = $1 AND state = 'HELD'`,
      [sku],
    );
    const inv = await inventory(c, sku);
    await c.query('COMMIT');
    const o = orders.rows[0];
    return {
      inventory: inv,
      orders: o.n,
      reservedOrders: o.reserved,
      rejectedOrders: o.rejected,
      orphanOrders: o.orphans,
      keyRows: keys.rows[0].n,
      heldReservations: held.rows[0].n,
      heldUnits: held.rows[0].q,
    };
  } catch (err) {
    await c.query('ROLLBACK').catch(() => {});
    throw err;
  } finally {
    c.release();
  }
}

export type BaselineFacts = { inventory: InventoryRow; claimRows: number };

export async function baselineFacts(pool: pg.Pool, sku: string): Promise<BaselineFacts> {
  const { rows } = await pool.query('SELECT count(*)::int AS n FROM bench_claims WHERE sku = $1', [sku]);
  return { inventory: await inventory(pool, sku), claimRows: rows[0].n };
}

/** Units handed out beyond the stock, from the inventory columns: max(0, reserved + sold - units). */
export const oversoldFromInventory = (inv: InventoryRow, units: number) => Math.max(0, inv.reserved + inv.sold - units);

/** I2: available + reserved + sold still equals the stock the SKU started with. */
export const conserved = (inv: InventoryRow, units: number) => inv.available + inv.reserved + inv.sold === units;
