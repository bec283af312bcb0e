import pg from 'pg';
import { withRetry, type RetryOptions } from './retry.js';

// int8 (count/sum) and numeric come back as JS numbers: every quantity here fits comfortably.
pg.types.setTypeParser(20, (v) => Number(v));

export type Queryable = {
  query<R extends pg.QueryResultRow = any>(text: string, values?: unknown[]): Promise<pg.QueryResult<R>>;
};

/** The only database handle the rest of the code sees: a pool plus the retrying transaction helper. */
export type Db = Queryable & {
  /**
   * One statement in its own implicit transaction, repeated on 40001/40P01/connection loss. Pass
   * `{ idempotent: false }` for a write that must not apply twice: a connection lost mid-statement then surfaces.
   */
  run<R extends pg.QueryResultRow = any>(text: string, values?: unknown[], opts?: { idempotent?: boolean }): Promise<pg.QueryResult<R>>;
  /** BEGIN ... COMMIT around `fn`, the whole of it repeated on 40001/40P01/connection loss */
  transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T>;
  end(): Promise<void>;
  pool: pg.Pool;
};

export type DbOptions = { connectionString: string; max?: number; retry?: RetryOptions; applicationName?: string };

/**
 * A `pg` pool wrapped with the retry policy of ARCHITECTURE.md section 2.
 * @example const db = createDb({ connectionString: config.databaseUrl })
 */
export function createDb(opts: DbOptions): Db {
  const pool = new pg.Pool({
    connectionString: opts.connectionString,
    max: opts.max ?? 20,
    application_name: opts.applicationName ?? 'lastunit',
    // No request waits forever: a lock held by a stuck session, or a runaway statement, becomes an error.
    lock_timeout: 10_000,
    statement_timeout: 30_000,
  });
  return wrapPool(pool, opts.retry);
}

/**
 * Any pg-compatible pool (node-postgres, or `@neondatabase/serverless` on the edge) as a Db.
 * @example const db = wrapPool(new neon.Pool({ connectionString }))
 */
export function wrapPool(pool: pg.Pool, retry: RetryOptions = {}): Db {
  // An idle client losing its connection must not crash the process; the next checkout gets a fresh one.
  pool.on('error', () => {});
  return {
    pool,
    query: (text, values) => pool.query(text, values as any[]),
    run: (text, values, opts) => withRetry(() => pool.query(text, values as any[]), { ...retry, ...opts }),
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
          await client.query('BEGIN');
          const out = await fn(client);
          await client.query('COMMIT');
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
