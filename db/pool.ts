import pg from 'pg';
import type { RetryOptions } from './retry.js';
import { wrapPool, type Db } from './wrap-pool.js';
import { localBounds, type DbTimeouts } from './timeouts.js';

export { localBounds, type DbTimeouts } from './timeouts.js';

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
 * A `pg` pool wrapped with the retry policy of docs/architecture.md, safe behind a transaction pooler (PgBouncer in
 * pool_mode=transaction, Neon's pooled endpoint; docs/deploy.md): no startup parameter but application_name, no
 * session `SET`, no named prepared statement (pg's parameterised queries use the unnamed one). The bounds are
 * `SET LOCAL` at the start of each transaction, and a single statement runs as BEGIN; SET LOCAL ...; statement; COMMIT,
 * written at once on a pipelining connection, so it still costs one round trip.
 * @example const db = createDb({ connectionString: config.database.url, max: 20, timeouts: config.database.timeouts })
 */
export function createDb(opts: DbOptions): Db {
  const pool = new pg.Pool({
    connectionString: opts.connectionString,
    max: opts.max,
    application_name: opts.applicationName ?? 'lastunit',
    // a connection that is not handed out in time is an error, not a wait
    connectionTimeoutMillis: opts.timeouts.connectMs,
    // queries of one client are written without waiting for the previous answer (pg 8.21+)
    pipeline: true,
  } as pg.PoolConfig);
  // No request waits forever: a lock held by a stuck session, a runaway statement or a forgotten open transaction
  // becomes an error.
  return wrapPool(pool, { retry: opts.retry, localBounds: localBounds(opts.timeouts) });
}
