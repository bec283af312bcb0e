// The bench's own database: a fresh one on the server DATABASE_URL points at (dropped at the end), or an embedded
// PostgreSQL in a temp dir when there is none. Migrated with the project's migrations, plus a bench-only table and function.
import { randomBytes } from 'node:crypto';
import os from 'node:os';
import path from 'node:path';
import { rm } from 'node:fs/promises';
import pg from 'pg';
import { startEmbeddedPostgres } from '../db/embedded.js';
import { createDb } from '../db/pool.js';
import { migrate } from '../db/migrate.js';
import { DEFAULTS } from '../kit/config-defaults.js';

export type BenchDatabase = {
  /** connection string of the bench database (what the server and the baselines use) */
  url: string;
  name: string;
  /** where it lives, for the report (no credentials) */
  where: string;
  drop: () => Promise<void>;
};

function withDatabase(url: string, name: string): string {
  const u = new URL(url);
  u.pathname = `/${name}`;
  return u.toString();
}

function describe(url: string): string {
  const u = new URL(url);
  return `${u.hostname}:${u.port || 5432}${u.pathname}`;
}

/**
 * Creates (and migrates) `lastunit_bench_<timestamp>_<hex>`: on the server of `adminUrl` when given, else in an
 * embedded PostgreSQL under a temp dir that is deleted with it.
 * @example const bdb = await createBenchDatabase({ adminUrl: process.env.DATABASE_URL }); ...; await bdb.drop()
 */
export async function createBenchDatabase(opts: {
  adminUrl?: string;
  log?: (s: string) => void;
}): Promise<BenchDatabase> {
  const name = `lastunit_bench_${Date.now()}_${randomBytes(2).toString('hex')}`;
  let bdb: BenchDatabase;
  if (opts.adminUrl) {
    const adminUrl = opts.adminUrl;
    const admin = new pg.Client({ connectionString: adminUrl, connectionTimeoutMillis: 10_000 });
    await admin.connect();
    try {
      await admin.query(`CREATE DATABASE ${admin.escapeIdentifier(name)}`);
    } finally {
      await admin.end();
    }
    const url = withDatabase(adminUrl, name);
    bdb = {
      url,
      name,
      where: describe(url),
      drop: async () => {
        const c = new pg.Client({ connectionString: adminUrl, connectionTimeoutMillis: 10_000 });
        await c.connect();
        try {
          await c.query(`DROP DATABASE IF EXISTS ${c.escapeIdentifier(name)} WITH (FORCE)`);
        } finally {
          await c.end();
        }
      },
    };
  } else {
    // Not mkdtemp: the embedded server may run as a 'postgres' user that must be able to enter the parent dir.
    const dir = path.join(os.tmpdir(), `lastunit-bench-pg-${process.pid}-${randomBytes(3).toString('hex')}`);
    opts.log?.(`bench: embedded PostgreSQL data in ${dir}`);
    const emb = await startEmbeddedPostgres({ dir, database: name, persistent: false });
    bdb = {
      url: emb.url,
      name,
      where: `embedded ${describe(emb.url)}`,
      drop: async () => {
        await emb.stop();
        await rm(dir, { recursive: true, force: true });
      },
    };
  }
  try {
    const db = createDb({
      connectionString: bdb.url,
      max: 1,
      applicationName: 'lastunit-bench',
      timeouts: DEFAULTS.database.timeouts,
    });
    try {
      await migrate(db);
      // Where the ceiling and naive baselines put their "reservation" rows: no FKs, one insert per claim.
      await db.query(`CREATE TABLE bench_claims (
        id bigserial PRIMARY KEY, sku text NOT NULL, quantity integer NOT NULL, created_at timestamptz NOT NULL DEFAULT now())`);
      // lastunit's batch statement as pgbench sends it (bench/pgbench.ts, LASTUNIT_BATCH_SCRIPT): a batch handed back
      // (LU003: every bucket that could cover it held, as while the sweeper evens them out) is sent again, where the
      // server would claim its orders one at a time; pgbench would end the client instead
      await db.query(`CREATE FUNCTION bench_place_orders(p_requests jsonb) RETURNS void LANGUAGE plpgsql AS $$
        BEGIN
          FOR i IN 1..100 LOOP
            BEGIN
              PERFORM place_orders(p_requests => p_requests, p_hold_ttl_seconds => 600, p_retention_hours => 24,
                                   p_max_holds => 0);
              RETURN;
            EXCEPTION WHEN SQLSTATE 'LU003' THEN
              NULL;
            END;
          END LOOP;
          RAISE EXCEPTION 'a batch was handed back 100 times';
        END $$`);
    } finally {
      await db.end();
    }
  } catch (err) {
    await bdb.drop().catch(() => {});
    throw err;
  }
  return bdb;
}

/** Reads `count` every 250 ms until it is 0 or `maxWaitMs` have passed since `t0`: the first and the last count. */
async function waitForZero(count: () => Promise<number>, t0: number, maxWaitMs: number) {
  let last = await count();
  const first = last;
  while (last > 0 && Date.now() - t0 < maxWaitMs) {
    await new Promise((r) => setTimeout(r, 250));
    last = await count();
  }
  return { first, last };
}

/**
 * Lets the bench database settle before a latency measurement: a CHECKPOINT (so no checkpoint of the earlier rounds'
 * writes lands in the middle), then waits up to `maxWaitMs` for running autovacuum workers (the earlier rounds leave
 * large tables behind) to finish. Returns what it waited for, for the log.
 * @example log(await settleDatabase(pool))
 */
export async function settleDatabase(pool: pg.Pool, maxWaitMs = 30_000): Promise<string> {
  const t0 = Date.now();
  await pool.query('CHECKPOINT').catch(() => undefined); // needs superuser or pg_checkpoint: skipped without
  const workers = async () =>
    Number(
      (await pool.query(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE backend_type = 'autovacuum worker'`))
        .rows[0].n,
    );
  const n = await waitForZero(workers, t0, maxWaitMs);
  return `database settled in ${Date.now() - t0} ms (checkpoint; ${n.first} autovacuum workers running at first, ${n.last} at the end)`;
}

/**
 * Waits up to `maxWaitMs` for the running server's relay to publish every outbox row the earlier rounds wrote (each
 * batch of sales writes an availability event), so a later latency round does not first wait for that backlog. Returns what it
 * saw, for the log.
 * @example log(await drainOutbox(pool))
 */
export async function drainOutbox(pool: pg.Pool, maxWaitMs = 60_000): Promise<string> {
  const t0 = Date.now();
  const left = async () =>
    Number((await pool.query(`SELECT count(*)::int AS n FROM outbox WHERE published_at IS NULL`)).rows[0].n);
  const n = await waitForZero(left, t0, maxWaitMs);
  return `outbox: ${n.first} unpublished rows at first, ${n.last} after ${Date.now() - t0} ms`;
}

/**
 * Waits up to `maxWaitMs` for the running server's delivery worker to give every event the earlier rounds wrote its
 * feed position (pgbench's rounds of lastunit's batches write events faster than one host positions them), so the next
 * round's costs are its own. Returns what it saw, for the log.
 * @example log(await drainEvents(pool))
 */
export async function drainEvents(pool: pg.Pool, maxWaitMs = 60_000): Promise<string> {
  const t0 = Date.now();
  const left = async () => Number((await pool.query(`SELECT count(*)::int AS n FROM events_pending`)).rows[0].n);
  const n = await waitForZero(left, t0, maxWaitMs);
  return `events: ${n.first} without a feed position at first, ${n.last} after ${Date.now() - t0} ms`;
}
