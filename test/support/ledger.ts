// What PostgreSQL says after an attack, read the same way by every adversarial test: a fingerprint of the tables (a
// refused request must leave it as it found it, I15) and the ledger audit (stock conserved and never negative, every
// counter equal to the orders it counts, the processor's charges equal to the confirmed orders).
import type { Queryable } from '../../db/pool.js';

/** Every table the order paths write, counted: a refused request changes none of these (I15). */
const TABLES = [
  'orders',
  'order_lines',
  'reservations',
  'idempotency_keys',
  'payments',
  'outbox',
  'processed_events',
  'compensations',
  'caller_refunds',
  'customer_purchases',
  'buyer_holds',
  'channel_incidents',
  'channel_listings',
  'products',
  'stock_operation_keys',
];

/**
 * The database as a refusal must leave it: row counts of every table the order paths write, each SKU's stock columns,
 * every key's state, every order's status and the fair-drop counters.
 * @example const before = await fingerprint(db); await attack(); expect(await fingerprint(db)).toEqual(before)
 */
export async function fingerprint(db: Queryable) {
  const { rows: present } = await db.query(
    `SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()`,
  );
  const have = new Set(present.map((r) => r.table_name as string));
  const counts: Record<string, number> = {};
  for (const t of TABLES.filter((t) => have.has(t)))
    counts[t] = (await db.query(`SELECT count(*)::int AS n FROM ${t}`)).rows[0].n;
  const rows = async (sql: string) => (await db.query(sql)).rows;
  return {
    counts,
    inventory: await rows(`SELECT sku, available, reserved, sold, version FROM inventory ORDER BY sku`),
    keys: await rows(`SELECT client_id, customer_id, key, state FROM idempotency_keys ORDER BY 1, 2, 3`),
    orders: await rows(`SELECT id, status FROM orders ORDER BY id`),
    purchases: await rows(`SELECT client_id, customer_id, sku, units FROM customer_purchases ORDER BY 1, 2, 3`),
    holds: await rows(`SELECT client_id, buyer, active FROM buyer_holds ORDER BY 1, 2`),
  };
}

/** What the sandbox processor knows of one processor key (payments/sandbox-server.ts `/_sandbox/charges/:key`). */
export type ChargeView = { charges: number; voids: number; refunds: number; captures: number; status: string };

/**
 * The ledger audit: a list of problems, empty when the books balance.
 *   - no inventory column, purchase counter or hold counter is negative (I1);
 *   - per SKU in `stocked`, available + reserved + sold equals what was stocked (I2), reserved equals the units of its
 *     live holds and sold the units of its sold reservations (plain SKUs; bundles hold their components);
 *   - every purchase counter equals the units its customer holds or bought (I12), every hold counter the orders its
 *     buyer has holding units (I14), in both directions;
 *   - with `charges`: every order with a payment attempt has exactly one net charge at the processor when CONFIRMED and
 *     none otherwise (a declined, released or cancelled order's money never stays taken).
 * @example expect(await auditLedger(db, { stocked: { SKU: 5 }, charges })).toEqual([])
 */
export async function auditLedger(
  db: Queryable,
  opts: { stocked: Record<string, number>; charges?: (key: string) => Promise<ChargeView> },
): Promise<string[]> {
  const problems: string[] = [];
  const rows = async (sql: string, values: unknown[] = []) => (await db.query(sql, values)).rows;
  // a SKU's figures: its row's plus its stock buckets' (db/migrations/0100_stock-buckets.sql), where there are any
  const bucketed = (await rows(`SELECT to_regclass('inventory_buckets') IS NOT NULL AS b`))[0].b as boolean;
  const stock = bucketed
    ? `(SELECT i.sku, i.purchase_limit, i.available + coalesce(sum(b.available), 0)::int AS available,
               i.reserved + coalesce(sum(b.reserved), 0)::int AS reserved, i.sold + coalesce(sum(b.sold), 0)::int AS sold
          FROM inventory i LEFT JOIN inventory_buckets b ON b.sku = i.sku GROUP BY i.sku)`
    : 'inventory';
  for (const r of await rows(
    `SELECT sku, available, reserved, sold FROM inventory WHERE least(available, reserved, sold) < 0`,
  ))
    problems.push(`negative stock: ${JSON.stringify(r)}`);
  if (bucketed)
    for (const r of await rows(`SELECT * FROM inventory_buckets WHERE least(available, reserved, sold) < 0`))
      problems.push(`negative stock bucket: ${JSON.stringify(r)}`);
  for (const r of await rows(`SELECT * FROM customer_purchases WHERE units < 0`))
    problems.push(`negative purchase counter: ${JSON.stringify(r)}`);
  for (const r of await rows(`SELECT * FROM buyer_holds WHERE active < 0`))
    problems.push(`negative hold counter: ${JSON.stringify(r)}`);
  const skus = Object.keys(opts.stocked);
  for (const r of await rows(
    `SELECT i.sku, i.available, i.reserved, i.sold,
            (SELECT coalesce(sum(quantity), 0)::int FROM reservations WHERE sku = i.sku AND state IN ('HELD', 'AWAITING_PAYMENT')) AS held,
            (SELECT coalesce(sum(quantity), 0)::int FROM reservations WHERE sku = i.sku AND state = 'SOLD') AS sold_units
       FROM ${stock} i WHERE i.sku = ANY ($1::text[])`,
    [skus],
  )) {
    const stocked = opts.stocked[r.sku]!;
    if (r.available + r.reserved + r.sold !== stocked)
      problems.push(`${r.sku}: available + reserved + sold = ${r.available + r.reserved + r.sold}, stocked ${stocked}`);
    if (r.reserved !== r.held) problems.push(`${r.sku}: reserved ${r.reserved}, live holds ${r.held}`);
    if (r.sold !== r.sold_units) problems.push(`${r.sku}: sold ${r.sold}, sold reservations ${r.sold_units}`);
  }
  // I12: the customer a purchase is counted against is the order's counted customer when it has one (a public key's
  // buyer), else its customerId; read through to_jsonb so the audit also runs on a schema without that column
  for (const r of await rows(
    `WITH actual AS (
       SELECT o.client_id, coalesce(to_jsonb(o)->>'counted_customer', o.customer_id) AS customer_id, r.sku, sum(r.quantity)::int AS units
         FROM reservations r JOIN orders o ON o.id = r.order_id JOIN inventory i ON i.sku = r.sku
        WHERE i.purchase_limit IS NOT NULL AND r.state IN ('HELD', 'AWAITING_PAYMENT', 'SOLD')
        GROUP BY 1, 2, 3)
     SELECT coalesce(a.client_id, c.client_id) AS client_id, coalesce(a.customer_id, c.customer_id) AS customer_id,
            coalesce(a.sku, c.sku) AS sku, coalesce(c.units, 0) AS counted, coalesce(a.units, 0) AS actual, i.purchase_limit
       FROM actual a FULL JOIN customer_purchases c ON (c.client_id, c.customer_id, c.sku) = (a.client_id, a.customer_id, a.sku)
       JOIN inventory i ON i.sku = coalesce(a.sku, c.sku)`,
  )) {
    if (r.counted !== r.actual) problems.push(`purchase counter ${JSON.stringify(r)}`);
    if (r.actual > r.purchase_limit) problems.push(`past the purchase limit: ${JSON.stringify(r)}`);
  }
  for (const r of await rows(
    `WITH actual AS (
       SELECT o.client_id, o.hold_buyer AS buyer, count(*)::int AS n FROM orders o
        WHERE o.hold_buyer IS NOT NULL AND EXISTS (SELECT 1 FROM reservations r WHERE r.order_id = o.id AND r.state IN ('HELD', 'AWAITING_PAYMENT'))
        GROUP BY 1, 2)
     SELECT coalesce(a.client_id, h.client_id) AS client_id, coalesce(a.buyer, h.buyer) AS buyer, coalesce(h.active, 0) AS counted, coalesce(a.n, 0) AS actual
       FROM actual a FULL JOIN buyer_holds h ON (h.client_id, h.buyer) = (a.client_id, a.buyer)`,
  ))
    if (r.counted !== r.actual) problems.push(`hold counter ${JSON.stringify(r)}`);
  if (opts.charges) {
    for (const o of await rows(
      `SELECT o.id, o.status, array_agg(coalesce(p.idem_key, p.order_id::text) ORDER BY p.attempt) AS keys
         FROM orders o JOIN payments p ON p.order_id = o.id WHERE p.state <> 'EXTERNAL' GROUP BY o.id, o.status`,
    )) {
      let net = 0;
      for (const key of o.keys as string[]) {
        const c = await opts.charges(key);
        net += c.charges - c.voids;
      }
      const want = o.status === 'CONFIRMED' ? 1 : 0;
      if (net !== want) problems.push(`order ${o.id} is ${o.status} with ${net} net charges at the processor`);
    }
  }
  return problems;
}
