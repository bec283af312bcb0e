import pg from 'pg';
import type { RetryOptions } from './retry.js';
import { wrapPool, type Db } from './wrap-pool.js';
import { timeoutOptions, type DbTimeouts } from './timeouts.js';

export { timeoutOptions, type DbTimeouts } from './timeouts.js';

export { wrapPool, type Db, type Queryable } from './wrap-pool.js';

// int8 (count/sum) and numeric come back as JS numbers: every quantity here fits comfortably.
pg.types.setTypeParser(20, (v) => Number(v));

export type DbOptions = {
  connectionString: string;
  max: number;
  retry?: RetryOptions;
  applicationName?: string;
  timeouts: DbTimeouts;
};

/**
 * A `pg` pool wrapped with the retry policy of docs/architecture.md.
 * @example const db = createDb({ connectionString: config.database.url, max: 20, timeouts: config.database.timeouts })
 */
export function createDb(opts: DbOptions): Db {
  const pool = new pg.Pool({
    connectionString: opts.connectionString,
    max: opts.max,
    application_name: opts.applicationName ?? 'lastunit',
    // No request waits forever: no connection, a lock held by a stuck session, a runaway statement or a forgotten
    // open transaction becomes an error.
    ...timeoutOptions(opts.timeouts),
  });
  return wrapPool(pool, opts.retry);
}
