// The ceiling through pgbench (PostgreSQL's own load driver, in C): the bare single-statement claim, prepared, from
// `clients` connections. Claims are what the database says (rows in bench_claims), not transactions that ran: a
// transaction that found nothing left claimed nothing. Latencies come from pgbench's per-transaction log.
import { spawn, spawnSync } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type pg from 'pg';
import { newOutcome, noteError, type LoadOutcome } from './load-outcome.js';

/** The same statement as pg-load.ts's ceiling: the conditional UPDATE and the claim row, one round trip. */
const CEILING_SCRIPT = `WITH c AS (
    UPDATE inventory SET available = available - 1, reserved = reserved + 1
     WHERE sku = :sku AND available >= 1
    RETURNING sku)
  INSERT INTO bench_claims (sku, quantity) SELECT sku, 1 FROM c;
`;

/** `pgbench --version`'s line when pgbench is on the PATH (or PGBENCH names it), else null. */
export function pgbenchVersion(): string | null {
  const r = spawnSync(process.env.PGBENCH ?? 'pgbench', ['--version'], { encoding: 'utf8', timeout: 10_000 });
  return r.status === 0 ? r.stdout.trim() : null;
}

export type PgbenchOptions = {
  /** the bench database (libpq URL) */
  url: string;
  /** to count the claims afterwards */
  pool: pg.Pool;
  sku: string;
  clients: number;
  /** seconds (-T); else `transactions` in all, split over the clients (-t, rounded up) */
  durationS?: number;
  transactions?: number;
  signal?: AbortSignal;
  /** pgbench's progress lines (-P 1) */
  onProgress?: (line: string) => void;
  /** another script than the bare single-row claim (e.g. BUCKET_CLAIM_SCRIPT), and its -D variables beside `sku` */
  script?: string;
  vars?: Record<string, string | number>;
  /** what counts the script's claims (default: its rows in bench_claims) */
  claims?: (pool: pg.Pool, sku: string) => Promise<number>;
};

/**
 * The bare bucketed claim: the same conditional UPDATE on one of :buckets bucket rows (db/migrations/0100), chosen at
 * random per transaction, and the claim row. What PostgreSQL can do for a bucketed SKU without the HTTP path.
 */
export const BUCKET_CLAIM_SCRIPT = `\\set b random(0, :buckets - 1)
WITH c AS (
    UPDATE inventory_buckets SET available = available - 1, reserved = reserved + 1, version = version + 1
     WHERE sku = :sku AND bucket = :b AND available >= 1
    RETURNING sku)
  INSERT INTO bench_claims (sku, quantity) SELECT sku, 1 FROM c;
`;

/**
 * The bare claim with :k claims per commit: one conditional UPDATE of the single row for :k units and :k claim rows,
 * as a coalesced batch of :k single-unit orders takes them. What one row gives when its commits are shared.
 */
export const BATCH_CLAIM_SCRIPT = `WITH c AS (
    UPDATE inventory SET available = available - :k, reserved = reserved + :k
     WHERE sku = :sku AND available >= :k
    RETURNING sku)
  INSERT INTO bench_claims (sku, quantity) SELECT sku, 1 FROM c, generate_series(1, :k);
`;

/**
 * lastunit's own coalesced batch, as the server sends it for :k single-unit orders of one SKU (place_orders,
 * db/functions/025_place-orders.sql, through bench_place_orders: bench/database.ts), each order with a key and a
 * customer of its own. What PostgreSQL does with
 * lastunit's SQL when the HTTP path costs nothing: with one client, one lane's batches back to back.
 */
export const LASTUNIT_BATCH_SCRIPT = `SELECT bench_place_orders(p_requests => (
    SELECT jsonb_agg(jsonb_build_object('clientId', 'pgbench', 'customerId', md5(random()::text), 'key', md5(random()::text),
             'hash', md5(random()::text), 'lines', jsonb_build_array(jsonb_build_object('sku', :sku::text, 'quantity', 1)),
             'buyer', NULL, 'tokenHash', NULL, 'countedCustomer', NULL))
      FROM generate_series(1, :k::integer)));
`;

/** Units a lastunit SKU holds reserved (its buckets' sums): the claims of LASTUNIT_BATCH_SCRIPT. */
export const reservedUnits = async (pool: pg.Pool, sku: string) =>
  (await pool.query('SELECT reserved FROM sku_figures(p_sku => $1)', [sku])).rows[0].reserved as number;

const countClaims = async (pool: pg.Pool, sku: string) =>
  (await pool.query('SELECT count(*)::int AS n FROM bench_claims WHERE sku = $1', [sku])).rows[0].n as number;

/**
 * Runs pgbench once: `-n -M prepared -c <clients> -j <min(clients, cores)> -P 1 -l`, the ceiling script, bounded by
 * -T or -t (and the abort signal, which kills it). 127.0.0.1 only: the URL is the bench's own database.
 * @example const o = await runPgbench({ url, pool, sku: 'CEIL', clients: 64, durationS: 5 })
 */
export async function runPgbench(opts: PgbenchOptions): Promise<LoadOutcome> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'lastunit-pgbench-'));
  try {
    const script = path.join(dir, 'claim.sql');
    await writeFile(script, opts.script ?? CEILING_SCRIPT);
    const perClient =
      opts.transactions !== undefined ? Math.max(1, Math.ceil(opts.transactions / opts.clients)) : undefined;
    const args = [
      '-n',
      '-M',
      'prepared',
      '-c',
      String(opts.clients),
      '-j',
      String(Math.min(opts.clients, os.cpus().length)),
      '-P',
      '1',
      '-l',
      `--log-prefix=${path.join(dir, 'tx')}`,
      '-D',
      `sku=${opts.sku}`,
      ...Object.entries(opts.vars ?? {}).flatMap(([k, v]) => ['-D', `${k}=${v}`]),
      '-f',
      script,
      ...(perClient !== undefined
        ? ['-t', String(perClient)]
        : ['-T', String(Math.max(1, Math.round(opts.durationS ?? 10)))]),
      opts.url,
    ];
    const claimsNow = opts.claims ?? countClaims;
    const before = await claimsNow(opts.pool, opts.sku);
    const o = newOutcome();
    const started = process.hrtime.bigint();
    const { code, output } = await new Promise<{ code: number | null; output: string }>((resolve, reject) => {
      const child = spawn(process.env.PGBENCH ?? 'pgbench', args, { stdio: ['ignore', 'pipe', 'pipe'] });
      let out = '';
      const onData = (b: Buffer) => {
        const s = b.toString('utf8');
        out = (out + s).slice(-20_000);
        for (const line of s.split('\n')) if (line.startsWith('progress:')) opts.onProgress?.(line.trim());
      };
      child.stdout.on('data', onData);
      child.stderr.on('data', onData);
      const onAbort = () => child.kill('SIGKILL');
      opts.signal?.addEventListener('abort', onAbort, { once: true });
      child.once('error', reject);
      child.once('close', (c) => {
        opts.signal?.removeEventListener('abort', onAbort);
        resolve({ code: c, output: out });
      });
    });
    o.elapsedS = Number(process.hrtime.bigint() - started) / 1e9;
    if (opts.signal?.aborted) throw new Error(`aborted: ${String(opts.signal.reason?.message ?? opts.signal.reason)}`);
    if (code !== 0) noteError(o, `pgbench exited with ${code}: ${output.slice(-500)}`);
    // the run's own duration (without connecting), as pgbench reports it, when it says
    const ran = /duration: (\d+) s/.exec(output);
    if (ran && perClient === undefined) o.elapsedS = Number(ran[1]);
    let transactions = 0;
    for (const f of await readdir(dir)) {
      if (!f.startsWith('tx')) continue;
      for (const line of (await readFile(path.join(dir, f), 'utf8')).split('\n')) {
        const fields = line.split(' ');
        if (fields.length < 6) continue;
        transactions++;
        o.latency.record(Number(fields[2]) / 1000); // µs -> ms
      }
    }
    const failed = /number of failed transactions: (\d+)/.exec(output);
    if (failed && Number(failed[1]) > 0)
      for (let i = 0; i < Number(failed[1]); i++) noteError(o, 'pgbench: failed transaction');
    o.claimed = (await claimsNow(opts.pool, opts.sku)) - before;
    o.refused = Math.max(0, transactions - o.claimed);
    o.requests = o.claimed + o.refused + o.errors;
    return o;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
