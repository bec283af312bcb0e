// Session bounds both drivers share (pg on the Node host, @neondatabase/serverless on Workers); no driver import here.

/**
 * Session bounds (ms; 0 = off): waiting for a connection, one statement, one lock, and an open transaction that sends
 * nothing (DATABASE_*_TIMEOUT_MS, docs/database.md).
 */
export type DbTimeouts = { connectMs: number; statementMs: number; lockMs: number; idleInTransactionMs: number };

/**
 * The same bounds as one `SET LOCAL` per setting, to follow a `BEGIN` in the same simple query: they last for that
 * transaction only, so a transaction pooler (PgBouncer, pool_mode=transaction) that refuses startup parameters and
 * hands the server connection to another client after COMMIT carries nothing over. Empty when every bound is 0.
 * @example localBounds({ connectMs: 5000, statementMs: 30000, lockMs: 10000, idleInTransactionMs: 60000 })
 * // 'SET LOCAL statement_timeout = 30000; SET LOCAL lock_timeout = 10000; SET LOCAL idle_in_...'
 */
export function localBounds(t: DbTimeouts): string {
  const set: [string, number][] = [
    ['statement_timeout', t.statementMs],
    ['lock_timeout', t.lockMs],
    ['idle_in_transaction_session_timeout', t.idleInTransactionMs],
  ];
  return set
    .filter(([, ms]) => ms > 0)
    .map(([name, ms]) => `SET LOCAL ${name} = ${Math.trunc(ms)}`)
    .join('; ');
}
