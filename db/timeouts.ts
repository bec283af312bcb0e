// Session bounds both drivers share (pg on the Node host, @neondatabase/serverless on Workers); no driver import here.

/**
 * Session bounds (ms; 0 = off): waiting for a connection, one statement, one lock, and an open transaction that sends
 * nothing (DATABASE_*_TIMEOUT_MS, docs/database.md).
 */
export type DbTimeouts = { connectMs: number; statementMs: number; lockMs: number; idleInTransactionMs: number };

/** The pool options both drivers (pg, Neon) take for these bounds. */
export function timeoutOptions(t: DbTimeouts) {
  return {
    connectionTimeoutMillis: t.connectMs,
    statement_timeout: t.statementMs,
    lock_timeout: t.lockMs,
    idle_in_transaction_session_timeout: t.idleInTransactionMs,
  };
}
