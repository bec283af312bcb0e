import { afterAll, describe, expect, it } from 'vitest';
import { createTestDatabase } from './support/db.js';
import { retryReason } from '../db/retry.js';

const retries: string[] = [];
const t = await createTestDatabase({ retry: { onRetry: (reason) => retries.push(reason), baseDelayMs: 1 } });
afterAll(() => t.drop());
await t.db.query(`CREATE TABLE acct (id int PRIMARY KEY, balance int NOT NULL)`);

/** Resolves when both sides have arrived. */
function barrier(n: number) {
  let arrived = 0;
  let open!: () => void;
  const gate = new Promise<void>((r) => (open = r));
  return () => {
    if (++arrived === n) open();
    return gate;
  };
}

describe('the transaction helper', () => {
  it('repeats the whole transaction after a serialization failure (40001) and both writes land', async () => {
    await t.db.query(`INSERT INTO acct VALUES (1, 0), (2, 0)`);
    retries.length = 0;
    const meet = barrier(2);
    let attempts = 0;
    let committed!: () => void;
    const oneCommitted = new Promise<void>((r) => (committed = r));
    // write skew under SERIALIZABLE: each reads both rows, then writes its own; one must fail with 40001 and is retried.
    // The retry starts once the other has committed (started earlier, it could read the snapshot without that write,
    // and SSI would refuse it a second time: a fourth attempt that says nothing about the helper).
    const txn = (id: number) =>
      t.db
        .transaction(async (tx) => {
          const attempt = ++attempts;
          if (attempt > 2) await oneCommitted;
          await tx.query('SET TRANSACTION ISOLATION LEVEL SERIALIZABLE');
          const { rows } = await tx.query<{ s: number }>('SELECT sum(balance)::int AS s FROM acct WHERE id IN (1, 2)');
          if (attempt <= 2) await meet();
          await tx.query('UPDATE acct SET balance = $2 WHERE id = $1', [id, rows[0]!.s + 1]);
        })
        .then(() => committed());
    await Promise.all([txn(1), txn(2)]);
    expect(retries).toContain('40001');
    expect(attempts).toBe(3);
    const { rows } = await t.db.query('SELECT id, balance FROM acct ORDER BY id');
    // the retried transaction saw the other's committed write
    expect(rows.map((r) => r.balance).sort()).toEqual([1, 2]);
  });

  it('repeats the whole transaction after a deadlock (40P01)', async () => {
    await t.db.query(`INSERT INTO acct VALUES (3, 0), (4, 0)`);
    retries.length = 0;
    const meet = barrier(2);
    // both first attempts hold their first row before either takes its second: a deadlock. Their retry does not wait
    // (the barrier opens only once both have arrived, so no attempt can pass it alone; a fixed 50 ms for both to arrive
    // ran out on a loaded machine, and the one that had not arrived then simply queued behind the other's row lock)
    let first = true;
    const txn = (a: number, b: number) =>
      t.db.transaction(async (tx) => {
        await tx.query('UPDATE acct SET balance = balance + 1 WHERE id = $1', [a]);
        if (first) {
          await meet();
          first = false;
        }
        await tx.query('UPDATE acct SET balance = balance + 1 WHERE id = $1', [b]);
      });
    const p1 = txn(3, 4);
    const p2 = txn(4, 3);
    await Promise.all([p1, p2]);
    expect(retries).toContain('40P01');
    const { rows } = await t.db.query('SELECT balance FROM acct WHERE id IN (3, 4) ORDER BY id');
    expect(rows).toEqual([{ balance: 2 }, { balance: 2 }]);
  });

  it('gives up after the bounded number of attempts and surfaces the error', async () => {
    retries.length = 0;
    let attempts = 0;
    await expect(
      t.db.transaction(async (tx) => {
        attempts++;
        await tx.query(`DO $$ BEGIN RAISE EXCEPTION 'always' USING ERRCODE = '40001'; END $$`);
      }),
    ).rejects.toMatchObject({ code: '40001' });
    expect(attempts).toBe(5);
    expect(retries).toEqual(['40001', '40001', '40001', '40001']);
  });

  it('does not repeat a transaction that failed for a reason of its own (constraint violation)', async () => {
    let attempts = 0;
    await expect(
      t.db.transaction(async (tx) => {
        attempts++;
        await tx.query(`INSERT INTO acct VALUES (1, 0)`);
      }),
    ).rejects.toMatchObject({ code: '23505' });
    expect(attempts).toBe(1);
  });

  it('classifies lost connections as retryable', () => {
    expect(retryReason({ code: '57P01' })).toBe('57P01');
    expect(retryReason({ code: '08006' })).toBe('08006');
    expect(retryReason({ code: '53300' })).toBe('53300');
    expect(retryReason(new Error('Connection terminated unexpectedly'))).toBe('connection');
    expect(retryReason({ code: '23505' })).toBeNull();
  });

  it('repeats a transaction whose connection was killed before commit', async () => {
    await t.db.query(`INSERT INTO acct VALUES (5, 0)`);
    retries.length = 0;
    let attempts = 0;
    await t.db.transaction(async (tx) => {
      attempts++;
      await tx.query('UPDATE acct SET balance = balance + 1 WHERE id = 5');
      if (attempts === 1) await tx.query('SELECT pg_terminate_backend(pg_backend_pid())').catch(() => {});
    });
    expect(attempts).toBe(2);
    expect(retries.length).toBeGreaterThan(0);
    const { rows } = await t.db.query('SELECT balance FROM acct WHERE id = 5');
    expect(rows[0].balance).toBe(1);
  });
});
