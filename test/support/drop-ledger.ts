// The drop audit (docs/architecture.md, I17): what must hold of drops and their entries after any race, read
// from the tables. Run it next to test/support/ledger.ts's auditLedger after concurrency tests.
import type { Queryable } from '../../db/pool.js';

/**
 * Every problem found (none: []):
 *   - a drop's `admitted` counter equals its entries ADMITTED (I17), and never exceeds what its SKU can sell;
 *   - every order that took units of a drop's SKU while the drop governed it is the order of exactly one ORDERED entry
 *     of that drop and customer (I17: no entry used twice, no order without an admission). "While": the order committed
 *     before the drop ended, by its events' time (written at its commit, clock_timestamp); its created_at is its
 *     transaction's start, and an order that began before the end and reached the drop gate after it (the gate waits
 *     for the ending transaction's lock on the drop, then finds it ended) is a plain sale;
 *   - an ORDERED entry's order exists and is for the drop's SKU.
 * @example expect(await auditDrops(db)).toEqual([])
 */
export async function auditDrops(db: Queryable): Promise<string[]> {
  const problems: string[] = [];
  const rows = async (sql: string) => (await db.query(sql)).rows;
  for (const r of await rows(
    `SELECT d.id, d.admitted, i.available, d.max_per_customer,
            (SELECT count(*)::int FROM drop_entries e WHERE e.drop_id = d.id AND e.state = 'ADMITTED') AS actual
       FROM drops d JOIN inventory i ON i.sku = d.sku`,
  )) {
    if (r.admitted !== r.actual) problems.push(`drop ${r.id}: admitted ${r.admitted}, ADMITTED entries ${r.actual}`);
    if (r.admitted > Math.max(Math.floor(r.available / r.max_per_customer), Math.min(r.available, 1)))
      problems.push(`drop ${r.id}: ${r.admitted} admissions outstanding, ${r.available} units available`);
  }
  for (const r of await rows(
    `SELECT o.id, d.id AS drop_id, (SELECT count(*)::int FROM drop_entries e WHERE e.order_id = o.id) AS entries
       FROM orders o JOIN order_lines l ON l.order_id = o.id JOIN drops d ON d.sku = l.sku
      WHERE o.status <> 'REJECTED' AND o.created_at >= d.created_at
        AND (d.ended_at IS NULL
             OR coalesce((SELECT min(ev.created_at) FROM events ev WHERE ev.order_id = o.id), o.created_at) < d.ended_at)`,
  ))
    if (r.entries !== 1) problems.push(`order ${r.id} of drop ${r.drop_id} used ${r.entries} entries`);
  for (const r of await rows(
    `SELECT e.id FROM drop_entries e JOIN drops d ON d.id = e.drop_id
      WHERE e.state = 'ORDERED' AND NOT EXISTS (
        SELECT 1 FROM orders o JOIN order_lines l ON l.order_id = o.id AND l.sku = d.sku
         WHERE o.id = e.order_id AND o.client_id = e.client_id AND o.status <> 'REJECTED')`,
  ))
    problems.push(`entry ${r.id} is ORDERED without a live order of its SKU`);
  return problems;
}
