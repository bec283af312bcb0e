// Session bounds both drivers share (pg on the Node host, @neondatabase/serverless on Workers); no driver import here.

/**
 * Session bounds (ms; 0 = off): waiting for a connection, one statement, one lock, and an open transaction that sends
 * nothing. Defaults: 5 s, 30 s, 10 s, 60 s (DATABASE_*_TIMEOUT_MS, docs/database.md).
 */
export type DbTimeouts = { connectMs?: number; statementMs?: number; lockMs?: number; idleInTransactionMs?: number };
export const DEFAULT_DB_TIMEOUTS: Required<DbTimeouts> = { connectMs: 5_000, statementMs: 30_000, lockMs: 10_000, idleInTransactionMs: 60_000 };

/** The pool options both drivers (pg, Neon) take for these bounds. */
export function timeoutOptions(t: DbTimeouts = {}) {
  const v = { ...DEFAULT_DB_TIMEOUTS, ...t };
  return {
    connectionTimeoutMillis: v.connectMs,
    statement_timeout: v.statementMs,
    lock_timeout: v.lockMs,
    idle_in_transaction_session_timeout: v.idleInTransactionMs,
  };
}
