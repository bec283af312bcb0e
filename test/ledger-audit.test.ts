// The adversarial suites' referee must itself catch what it is there to catch: each kind of corruption written by
// hand (bypassing the constraints where they would refuse it) is reported by the audit, and any write moves the
// fingerprint.
import { describe, expect, it } from 'vitest';
import { KEYS, startTestApp } from './support/app.js';
import { auditLedger, fingerprint } from './support/ledger.js';

const t = await startTestApp({ maxActiveHolds: 5 });
await t.product('AUD-A', 10);
expect(
  (
    await t.gql(
      `mutation { setPurchaseLimit(input: { sku: "AUD-A", limit: 3 }) { userErrors { code } } }`,
      {},
      KEYS.admin,
    )
  ).body.data.setPurchaseLimit.userErrors,
).toEqual([]);
const placed = await t.placeOrder({
  idempotencyKey: 'aud-1',
  customerId: 'aud-c',
  lines: [{ sku: 'AUD-A', quantity: 2 }],
});
expect(placed.order!.status).toBe('RESERVED');
const stocked = { 'AUD-A': 10 };

/** Runs `corrupt` in a transaction that is rolled back after the audit has read it. */
async function auditAfter(corrupt: string): Promise<string[]> {
  const client = await t.db.pool.connect();
  try {
    await client.query('BEGIN');
    await client.query(corrupt);
    return await auditLedger(client, { stocked });
  } finally {
    await client.query('ROLLBACK');
    client.release();
  }
}

describe('the ledger audit', () => {
  it('finds the books balanced after a placed order', async () => {
    expect(await auditLedger(t.db, { stocked })).toEqual([]);
  });

  it.each([
    [
      'a unit appearing from nowhere',
      `UPDATE inventory SET available = available + 1 WHERE sku = 'AUD-A'`,
      /available \+ reserved \+ sold = 11/,
    ],
    [
      'a hold without its reserved units',
      `UPDATE inventory SET reserved = reserved - 1, available = available + 1 WHERE sku = 'AUD-A'`,
      /reserved 1, live holds 2/,
    ],
    [
      'a sale without its reservation',
      `UPDATE inventory SET sold = sold + 1, available = available - 1 WHERE sku = 'AUD-A'`,
      /sold 1, sold reservations 0/,
    ],
    [
      'a purchase counter that drifted',
      `UPDATE customer_purchases SET units = 1 WHERE sku = 'AUD-A'`,
      /purchase counter/,
    ],
    ['a hold counter that drifted', `UPDATE buyer_holds SET active = 2`, /hold counter/],
  ])('reports %s', async (_name, corrupt, problem) => {
    const problems = await auditAfter(corrupt);
    expect(problems.join('\n')).toMatch(problem);
  });

  it('the fingerprint moves with any write, and not with a read', async () => {
    const before = await fingerprint(t.db);
    await t.gql(`{ product(sku: "AUD-A") { availability { available } } }`);
    expect(await fingerprint(t.db)).toEqual(before);
    await t.release(placed.order!.id);
    expect(await fingerprint(t.db)).not.toEqual(before);
  });
});
