// The edge driver: @neondatabase/serverless speaks the PostgreSQL protocol over a WebSocket (no TCP in Workers).
import { Pool, neonConfig, types } from '@neondatabase/serverless';
import type pg from 'pg';
import { wrapPool, type Db } from './wrap-pool.js';
import type { RetryOptions } from './retry.js';
import { localBounds, type DbTimeouts } from './timeouts.js';

// int8 (count/sum) as JS numbers, as db/pool.ts does for node-postgres.
types.setTypeParser(20, (v: string) => Number(v));

export type NeonDbOptions = {
  connectionString: string;
  /**
   * Dev/test only: `host:port` of a plain-WebSocket-to-TCP bridge (test/support/ws-bridge.ts). Unset in production,
   * where Neon's own proxy (wss, TLS to PostgreSQL) is used.
   */
  wsProxy?: string;
  max: number;
  retry?: RetryOptions;
  /** the same session bounds as db/pool.ts */
  timeouts: DbTimeouts;
};

/**
 * A Neon serverless pool as our Db. Create one per request in Workers and end it when the request is done.
 * @example const db = createNeonDb({ connectionString, max: 5, timeouts }); ctx.waitUntil(db.end())
 */
export function createNeonDb(opts: NeonDbOptions): Db {
  if (opts.wsProxy) {
    const proxy = opts.wsProxy;
    neonConfig.wsProxy = (host, port) => `${proxy}/v1?address=${host}:${port}`;
    neonConfig.useSecureWebSocket = false;
    neonConfig.forceDisablePgSSL = true;
    neonConfig.pipelineTLS = false;
    neonConfig.pipelineConnect = false;
  }
  // the bounds as SET LOCAL in each transaction, as db/pool.ts sends them: startup parameters are refused by a
  // transaction pooler (PgBouncer; Neon's pooled endpoint is one), and a session SET would outlive the transaction there.
  // This driver does not pipeline, so a single statement costs three round trips (BEGIN, statement, COMMIT)
  const pool = new Pool({
    connectionString: opts.connectionString,
    max: opts.max,
    connectionTimeoutMillis: opts.timeouts.connectMs,
  });
  return wrapPool(pool as unknown as pg.Pool, { retry: opts.retry, localBounds: localBounds(opts.timeouts) });
}
