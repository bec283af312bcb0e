// The database handle every store takes (Db): a pg-compatible pool with the retrying statement and transaction helpers.
// No runtime import of `pg` here: the worker bundle reaches this file and must not pull in node-postgres.
import type pg from 'pg';
import { withRetry, type RetryOptions } from './retry.js';
import { tracingEnabled, withSqlSpan } from '../common/tracing.js';

// Rows are typed as pg types them (`any` unless told): the stores read no row without its schema (db/rows.ts).
export type Queryable = {
  // biome-ignore lint/suspicious/noExplicitAny: pg's own default; every store parses its rows (db/rows.ts)
  query<R extends pg.QueryResultRow = any>(text: string, values?: unknown[]): Promise<pg.QueryResult<R>>;
};

/** The only database handle the rest of the code sees: a pool plus the retrying transaction helper. */
export type Db = Queryable & {
  /**
   * One statement in its own implicit transaction, repeated on 40001/40P01/connection loss. Pass
   * `{ idempotent: false }` for a write that must not apply twice: a connection lost mid-statement then surfaces.
   */
  // biome-ignore lint/suspicious/noExplicitAny: as for query
  run<R extends pg.QueryResultRow = any>(
    text: string,
    values?: unknown[],
    opts?: { idempotent?: boolean },
  ): Promise<pg.QueryResult<R>>;
  /** BEGIN ... COMMIT around `fn`, the whole of it repeated on 40001/40P01/connection loss */
  transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T>;
  end(): Promise<void>;
  pool: pg.Pool;
};

export type WrapOptions = {
  retry?: RetryOptions;
  /**
   * `SET LOCAL ...` statements (db/timeouts.ts localBounds) every transaction starts with, and every single statement
   * is wrapped in (BEGIN; SET LOCAL ...; statement; COMMIT, sent pipelined: one round trip where the pool pipelines).
   * Absent or empty: statements run as they are (the bounds come from the connection or the role).
   */
  localBounds?: string;
};

/** One statement in a transaction of its own that starts with `bounds`: three queries written at once on one client. */
async function boundedStatement<R extends pg.QueryResultRow>(
  pool: pg.Pool,
  bounds: string,
  text: string,
  values?: unknown[],
): Promise<pg.QueryResult<R>> {
  const client = await pool.connect();
  let broken = false;
  const onError = () => {
    broken = true;
  };
  client.on('error', onError);
  try {
    // all three are queued before any answer is awaited: a pipelining client (db/pool.ts) writes them together
    const sent = [client.query(`BEGIN; ${bounds}`), client.query<R>(text, values), client.query('COMMIT')] as const;
    const [begin, statement, commit] = await Promise.allSettled(sent);
    for (const r of [begin, statement, commit]) if (r.status === 'rejected') throw r.reason;
    if (statement.status !== 'fulfilled') throw new Error('unreachable');
    return statement.value;
  } catch (err) {
    // a failed statement made COMMIT answer ROLLBACK; a failure of BEGIN or COMMIT itself leaves the session unknown
    await client.query('ROLLBACK').catch(() => {
      broken = true;
    });
    throw err;
  } finally {
    client.off('error', onError);
    client.release(broken);
  }
}

/**
 * Any pg-compatible pool (node-postgres, or `@neondatabase/serverless` on the edge) as a Db.
 * @example const db = wrapPool(new neon.Pool({ connectionString }))
 */
export function wrapPool(pool: pg.Pool, opts: WrapOptions = {}): Db {
  const retry = opts.retry ?? {};
  const bounds = opts.localBounds ?? '';
  const begin = bounds ? `BEGIN; ${bounds}` : 'BEGIN';
  const statement = <R extends pg.QueryResultRow>(text: string, values?: unknown[]) =>
    bounds ? boundedStatement<R>(pool, bounds, text, values) : pool.query<R>(text, values);
  // An idle client losing its connection must not crash the process; the next checkout gets a fresh one.
  pool.on('error', () => {});
  return {
    pool,
    // each statement a span when tracing is on (common/tracing.ts); off, the statement's own call
    query: (text, values) => withSqlSpan(text, () => statement(text, values)),
    run: (text, values, o) => withRetry(() => withSqlSpan(text, () => statement(text, values)), { ...retry, ...o }),
    transaction: (fn) =>
      withRetry(async () => {
        const client = await pool.connect();
        let broken = false;
        // A connection lost mid-transaction is reported by the failing query; this keeps the event from crashing the process.
        const onError = () => {
          broken = true;
        };
        client.on('error', onError);
        try {
          const tx: Queryable = tracingEnabled()
            ? { query: (text, values) => withSqlSpan(text, () => client.query(text, values)) }
            : client;
          await tx.query(begin);
          const out = await fn(tx);
          await tx.query('COMMIT');
          return out;
        } catch (err) {
          await client.query('ROLLBACK').catch(() => {
            broken = true;
          });
          throw err;
        } finally {
          client.off('error', onError);
          client.release(broken);
        }
      }, retry),
    end: () => pool.end(),
  };
}
