// The two baselines, straight through `pg` on the same database: the bare single-statement claim (the ceiling any
// claim path can reach on this machine) and the naive read-then-write (fast and wrong: it oversells).
import pg from 'pg';
import { newOutcome, noteError, type LoadOutcome } from './load-outcome.js';

/** One claim attempt: true when a unit was claimed, false when refused (nothing left). Throws on a fault. */
export type Claim = (pool: pg.Pool, sku: string) => Promise<boolean>;

/** I3 as one statement: the conditional UPDATE and the claim row in one data-modifying CTE, one round trip. */
const CEILING_SQL = `WITH c AS (
    UPDATE inventory SET available = available - 1, reserved = reserved + 1
     WHERE sku = $1 AND available >= 1
    RETURNING sku)
  INSERT INTO bench_claims (sku, quantity) SELECT sku, 1 FROM c`;

export const ceilingClaim: Claim = async (pool, sku) => (await pool.query(CEILING_SQL, [sku])).rowCount === 1;

/**
 * The cautionary baseline: read, decide in the application, write back what was read minus one. Autocommit, no lock,
 * not conditional: concurrent buyers read the same count and all "win". `available` never goes negative (it is set to
 * read - 1 >= 0), so no CHECK fires; it just hands out more units than exist. The claim row rides on the UPDATE.
 */
export const naiveClaim: Claim = async (pool, sku) => {
  const { rows } = await pool.query<{ available: number }>('SELECT available FROM inventory WHERE sku = $1', [sku]);
  const read = rows[0]?.available ?? 0;
  if (read < 1) return false;
  const w = await pool.query(
    `WITH u AS (UPDATE inventory SET available = $2, reserved = reserved + 1 WHERE sku = $1 RETURNING sku)
     INSERT INTO bench_claims (sku, quantity) SELECT sku, 1 FROM u`,
    [sku, read - 1],
  );
  return w.rowCount === 1;
};

/** A pool sized like the HTTP run's concurrency (at most 64), every connection opened before anything is timed. */
export async function openBenchPool(url: string, size: number): Promise<pg.Pool> {
  const pool = new pg.Pool({
    connectionString: url,
    max: size,
    application_name: 'lastunit-bench',
    statement_timeout: 10_000,
    connectionTimeoutMillis: 10_000,
    idleTimeoutMillis: 0,
  });
  pool.on('error', () => {});
  const clients = await Promise.all(Array.from({ length: size }, () => pool.connect()));
  for (const c of clients) c.release();
  return pool;
}

export type PgLoadOptions = {
  pool: pg.Pool;
  sku: string;
  claim: Claim;
  concurrency: number;
  /** total attempts (flash sale); else `durationS` */
  amount?: number;
  durationS?: number;
  signal?: AbortSignal;
};

/**
 * A closed loop of `concurrency` workers, each sending its next claim when its previous one answered.
 * @example const o = await runPgLoad({ pool, sku: 'CEIL', claim: ceilingClaim, concurrency: 64, durationS: 10 })
 */
export async function runPgLoad(opts: PgLoadOptions): Promise<LoadOutcome> {
  const o = newOutcome();
  const started = process.hrtime.bigint();
  const endAt = started + BigInt(Math.round((opts.durationS ?? 10) * 1e9));
  let issued = 0;
  const more = () => {
    if (opts.signal?.aborted) return false;
    if (opts.amount !== undefined) return issued < opts.amount;
    return process.hrtime.bigint() < endAt;
  };
  async function worker() {
    while (more()) {
      issued++;
      const t0 = process.hrtime.bigint();
      try {
        if (await opts.claim(opts.pool, opts.sku)) o.claimed++;
        else o.refused++;
      } catch (err) {
        noteError(o, `pg: ${(err as Error).message}`);
      }
      o.latency.record(Number(process.hrtime.bigint() - t0) / 1e6);
    }
  }
  const workers = opts.amount !== undefined ? Math.min(opts.concurrency, opts.amount) : opts.concurrency;
  await Promise.all(Array.from({ length: workers }, worker));
  o.elapsedS = Number(process.hrtime.bigint() - started) / 1e9;
  o.requests = o.claimed + o.refused + o.errors;
  if (opts.signal?.aborted) throw new Error(`aborted: ${String(opts.signal.reason?.message ?? opts.signal.reason)}`);
  return o;
}
