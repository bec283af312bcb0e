import pg from 'pg';
import type { RetryOptions } from './retry.js';
import { wrapPool, type Db } from './wrap-pool.js';

export { wrapPool, type Db, type Queryable } from './wrap-pool.js';

// int8 (count/sum) and numeric come back as JS numbers: every quantity here fits comfortably.
pg.types.setTypeParser(20, (v) => Number(v));

export type DbOptions = { connectionString: string; max?: number; retry?: RetryOptions; applicationName?: string };

/**
 * A `pg` pool wrapped with the retry policy of docs/architecture.md.
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

