// The bench's stock-bucket rows (`npm run bench -- --buckets 1,2,4,8`) and the capacity model's inputs
// (docs/capacity.md): per bucket count, the hot SKU over HTTP at `clients` clients with that many stock rows; beside
// them pgbench's bare single-row claim and its bare bucketed claim (what PostgreSQL can do without the HTTP path), and
// sold-out answers. Every row carries what it cost: server CPU and PostgreSQL CPU per answer (ms), WAL bytes per
// answer and answers per commit, with the machine's 1-minute load when it ran.
//   server CPU:     the server process's utime + stime (/proc/<pid>/stat) over the round;
//   PostgreSQL CPU: the bench database's backends' utime + stime (polled, see backendCpu), not the shared background
//                   writers;
//   WAL:            pg_current_wal_lsn() before and after: the whole server's WAL, so on a server other databases
//                   write to at the same time, an upper bound;
//   commits:        xact_commit of the bench database (pg_stat_database), its answers per commit are the batching.
import os from 'node:os';
import type pg from 'pg';
import { createProduct, runPlaceOrderLoad } from './http-load.js';
import {
  BATCH_CLAIM_SCRIPT,
  BUCKET_CLAIM_SCRIPT,
  LASTUNIT_BATCH_SCRIPT,
  reservedUnits,
  runPgbench,
  type PgbenchOptions,
} from './pgbench.js';
import type { ServerProcess } from './server.js';
import { round } from '../kit/stats.js';
import { lastunitFacts, waitForQuiet } from './verify.js';
import { drainEvents, drainOutbox } from './database.js';
import { batchesBetween, boxCpuMs, busyShare, claimBatches, cpuMsOf } from './proc.js';

export type CostRow = {
  label: string;
  buckets: number;
  clients: number;
  answers: number;
  claims: number;
  perS: number;
  /** claims/s (answers/s for sold-out) over the single-row bare claim's */
  vsBare: number | null;
  serverCpuMsPerAnswer: number | null;
  pgCpuMsPerAnswer: number;
  /** the load generator's CPU per answer (autocannon in the bench process, or pgbench) */
  clientsCpuMsPerAnswer: number;
  /** the share of the whole machine's CPU (all cores) busy during the round, 0-1; null without /proc */
  boxBusy: number | null;
  walBytesPerAnswer: number;
  answersPerCommit: number;
  /**
   * lastunit rows: the server's claim batches in the round (/metrics): mean claims per batch transaction and its mean
   * time as the server sees it; null for pgbench rows
   */
  batch: { size: number; ms: number } | null;
  /** 1-minute load average at the end of the round */
  load: number;
  errors: number;
  /**
   * A lastunit row's facts, read from the database after the round (its SKU never runs short, so every refusal is a
   * false sold out): what failed, empty when units were conserved, every unit taken has one order, and no key ordered
   * twice. Absent for pgbench rows.
   */
  problems?: string[];
};

/**
 * What the database says a lastunit hot-SKU round did to `sku` (stocked with `stock` units it cannot run out of),
 * once the requests still in flight when the clock stopped have committed.
 */
async function hotSkuProblems(pool: pg.Pool, sku: string, stock: number, keyPrefix: string): Promise<string[]> {
  await waitForQuiet(pool, sku);
  const f = await lastunitFacts(pool, sku, keyPrefix); // an order no key row names is a duplicate (orphanOrders)
  const inv = f.inventory;
  const taken = inv.reserved + inv.sold;
  const out: string[] = [];
  if (inv.available + taken !== stock)
    out.push(`units not conserved: ${inv.available} + ${inv.reserved} + ${inv.sold} != ${stock}`);
  if (f.reservedOrders !== taken) out.push(`${taken} units taken by ${f.reservedOrders} reserved orders of one unit`);
  if (f.rejectedOrders)
    out.push(
      inv.available > 0
        ? `${f.rejectedOrders} refused with ${inv.available} units left (false sold out)`
        : `${f.rejectedOrders} refused: the SKU ran out (its stock is too small for the round)`,
    );
  if (f.orphanOrders) out.push(`${f.orphanOrders} orders without their key (duplicates)`);
  return out;
}

/**
 * CPU ms used by the bench database's backends (pg_stat_activity of current_database()) since start: polled every
 * 200 ms, so a backend that ends between polls (pgbench's, at its end) loses at most its last 200 ms. Background
 * processes (WAL writer, checkpointer) are not counted: they are shared with every other database on the server.
 */
function backendCpu(pool: pg.Pool) {
  const base = new Map<number, number>();
  const last = new Map<number, number>();
  let first = true;
  const poll = async () => {
    const { rows } = await pool.query(
      'SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()',
    );
    for (const { pid } of rows as { pid: number }[]) {
      const ms = await cpuMsOf(pid);
      if (!last.has(pid)) base.set(pid, first ? ms : 0); // a backend born during the round counts from 0
      last.set(pid, ms);
    }
    first = false;
  };
  let timer: NodeJS.Timeout | undefined;
  const started = poll().then(() => {
    timer = setInterval(() => void poll().catch(() => {}), 200);
  });
  return {
    started,
    async stop(): Promise<number> {
      clearInterval(timer);
      await poll().catch(() => {});
      let total = 0;
      for (const [pid, ms] of last) total += ms - (base.get(pid) ?? 0);
      return total;
    },
  };
}

type Batches = Awaited<ReturnType<typeof claimBatches>>;
type Mark = {
  at: bigint;
  serverMs: number;
  /** this process and the children it has waited for (autocannon runs here, pgbench is a child): the load's CPU */
  clientsMs: number;
  box: { busy: number; total: number };
  lsn: string;
  commits: number;
  batches: Batches | null;
};

async function mark(pool: pg.Pool, srv: ServerProcess | null): Promise<Mark> {
  const { rows } = await pool.query(
    `SELECT pg_current_wal_lsn()::text AS lsn,
            (SELECT xact_commit FROM pg_stat_database WHERE datname = current_database())::bigint AS commits`,
  );
  return {
    at: process.hrtime.bigint(),
    serverMs: srv ? await cpuMsOf(srv.pid) : 0,
    clientsMs: await cpuMsOf(process.pid, true),
    box: await boxCpuMs(),
    lsn: rows[0].lsn,
    commits: Number(rows[0].commits),
    batches: srv ? await claimBatches(srv.endpoint.replace(/\/graphql$/, '/metrics')) : null,
  };
}

/** Runs `work` between two marks with the backends' CPU tracked. */
async function measured<T>(pool: pg.Pool, srv: ServerProcess | null, work: () => Promise<T>) {
  const cpu = backendCpu(pool);
  await cpu.started;
  const a = await mark(pool, srv);
  const out = await work();
  const b = await mark(pool, srv);
  return { out, a, b, pgMs: await cpu.stop() };
}

async function costs(pool: pg.Pool, m: { a: Mark; b: Mark; pgMs: number }, answers: number, withServer: boolean) {
  const { a, b } = m;
  const { rows } = await pool.query('SELECT pg_wal_lsn_diff($1::pg_lsn, $2::pg_lsn)::float8 AS wal', [b.lsn, a.lsn]);
  const per = (x: number) => (answers > 0 ? x / answers : 0);
  const busy = busyShare(a.box, b.box);
  return {
    elapsedS: Number(b.at - a.at) / 1e9,
    serverCpuMsPerAnswer: withServer ? round(per(b.serverMs - a.serverMs), 3) : null,
    pgCpuMsPerAnswer: round(per(m.pgMs), 3),
    clientsCpuMsPerAnswer: round(per(b.clientsMs - a.clientsMs), 3),
    boxBusy: busy === null ? null : round(busy, 3),
    walBytesPerAnswer: round(per(Number(rows[0].wal))),
    // the measuring statements' own commits are left out
    answersPerCommit: round(answers / Math.max(1, b.commits - a.commits - 1), 2),
    batch: a.batches && b.batches ? batchesBetween(a.batches, b.batches) : null,
  };
}

async function adminGql(srv: ServerProcess, query: string, variables: unknown) {
  const r = await fetch(srv.endpoint, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${srv.keys.admin}` },
    body: JSON.stringify({ query, variables }),
  });
  const body = await r.json();
  if (body.errors) throw new Error(JSON.stringify(body.errors));
  return body.data;
}

/** setStockBuckets through the server's admin key; throws on a userError. */
export async function setBuckets(srv: ServerProcess, sku: string, buckets: number) {
  const d = await adminGql(
    srv,
    'mutation($i: SetStockBucketsInput!) { setStockBuckets(input: $i) { userErrors { code message } } }',
    { i: { sku, buckets } },
  );
  if (d.setStockBuckets.userErrors.length) throw new Error(JSON.stringify(d.setStockBuckets.userErrors));
}

export type BucketBenchOptions = {
  srv: ServerProcess;
  pool: pg.Pool;
  url: string;
  runId: string;
  buckets: number[];
  clients: number;
  durationS: number;
  signal?: AbortSignal;
  log: (line: string) => void;
};

/**
 * The rows: pgbench bare single-row claim, pgbench bare bucketed claim per bucket count, lastunit over HTTP per bucket
 * count, and sold-out answers over HTTP; each with its costs.
 * @example const rows = await runBucketRows({ srv, pool, url, runId, buckets: [1, 2, 4, 8], clients: 64, durationS: 4, log })
 */
export async function runBucketRows(opts: BucketBenchOptions): Promise<CostRow[]> {
  const rows: CostRow[] = [];
  const load = () => round(os.loadavg()[0]!, 2);
  const stock = 50_000_000;
  const row = (r: Omit<CostRow, 'vsBare' | 'load'>): CostRow => {
    const bare = rows.find((x) => x.label === 'pgbench bare claim, 1 row');
    const full = { ...r, vsBare: bare && bare.perS > 0 ? round(r.perS / bare.perS, 3) : null, load: load() };
    opts.log(`bench:   -> ${formatRow(full)}`);
    rows.push(full);
    return full;
  };

  type Script = Pick<PgbenchOptions, 'script' | 'vars' | 'claims'> & { clients?: number };
  const pgbench = (sku: string, script: Script) =>
    runPgbench({
      url: opts.url,
      pool: opts.pool,
      sku,
      clients: opts.clients,
      durationS: opts.durationS,
      signal: opts.signal,
      ...script,
    });
  /** A pgbench row: `script` on a SKU of `buckets` stock rows, its claims counted in the database. */
  const bareRow = async (label: string, buckets: number, script: Script) => {
    const sku = `PGB-${rows.length}-${opts.runId}`;
    await createProduct(opts.srv, sku, stock);
    if (buckets > 1) await setBuckets(opts.srv, sku, buckets);
    // PostgreSQL's max_connections is shared with whatever else uses the server: a run that could not open its
    // clients, or on a machine so busy that its clients had not connected before its time was up claimed nothing, is
    // run again (up to 5 times, 3 s apart) rather than reported as 0
    let m = await measured(opts.pool, null, () => pgbench(sku, script));
    const failed = () => m.out.errorSamples.some((e) => e.includes('too many clients')) || m.out.claimed === 0;
    for (let i = 0; i < 5 && failed(); i++) {
      opts.log(
        `bench:   pgbench ${m.out.claimed === 0 ? 'claimed nothing' : `could not open ${opts.clients} connections (too many clients)`}: again in 3 s`,
      );
      await new Promise((r) => setTimeout(r, 3000));
      m = await measured(opts.pool, null, () => pgbench(sku, script));
    }
    const o = m.out;
    row({
      label,
      buckets,
      clients: script.clients ?? opts.clients,
      answers: o.claimed + o.refused,
      claims: o.claimed,
      perS: round(o.claimed / o.elapsedS),
      errors: o.errors,
      ...(await costs(opts.pool, m, o.claimed + o.refused, false)),
    });
  };
  /** A lastunit row: placeOrder over HTTP for `sku`; a SKU with stock is checked in the database afterwards. */
  const lastunitRow = async (label: string, buckets: number, sku: string, keyPrefix: string, stocked: boolean) => {
    const m = await measured(opts.pool, opts.srv, () =>
      runPlaceOrderLoad({ srv: opts.srv, sku, keyPrefix, connections: opts.clients, durationS: opts.durationS }),
    );
    const o = m.out;
    const answers = o.claimed + o.refused;
    const c = await costs(opts.pool, m, answers, true);
    return row({
      label,
      buckets,
      clients: opts.clients,
      answers,
      claims: o.claimed,
      perS: round((stocked ? o.claimed : answers) / c.elapsedS),
      errors: o.errors,
      ...c,
      ...(stocked ? { problems: await hotSkuProblems(opts.pool, sku, stock, keyPrefix) } : {}),
    });
  };

  for (const n of [1, ...opts.buckets.filter((b) => b > 1)])
    await bareRow(
      n > 1 ? `pgbench bare claim, ${n} buckets` : 'pgbench bare claim, 1 row',
      n,
      n > 1 ? { script: BUCKET_CLAIM_SCRIPT, vars: { buckets: n } } : {},
    );

  for (const n of opts.buckets) {
    const sku = `LUB-${n}-${opts.runId}`;
    await createProduct(opts.srv, sku, stock);
    if (n > 1) await setBuckets(opts.srv, sku, n);
    // warm: the pool's connections and their plans for this SKU's path
    await runPlaceOrderLoad({ srv: opts.srv, sku, keyPrefix: `lub${n}w`, connections: opts.clients, amount: 300 });
    await lastunitRow(`lastunit hot SKU, ${n === 1 ? '1 row' : `${n} buckets`}`, n, sku, `lub${n}`, true);
  }

  // One row committing as many claims per commit as lastunit's single-row batches did: what one row gives when its
  // commits are shared (the row term of the capacity model), without the HTTP path or lastunit's other rows.
  const k = Math.round(rows.find((r) => r.label === 'lastunit hot SKU, 1 row')?.batch?.size ?? 0);
  if (k >= 2)
    await bareRow(`pgbench bare claim, 1 row, ${k} per commit`, 1, { script: BATCH_CLAIM_SCRIPT, vars: { k } });
  // lastunit's own batch statement at that size, one stream of batches per stock row (a lane each), no HTTP path: what
  // PostgreSQL does with lastunit's SQL, beside what the server gets out of it above
  if (k >= 2)
    for (const n of [1, ...opts.buckets.filter((b) => b > 1)])
      await bareRow(`pgbench lastunit batches, ${n === 1 ? '1 row' : `${n} buckets`}`, n, {
        script: LASTUNIT_BATCH_SCRIPT,
        vars: { k },
        clients: n,
        claims: reservedUnits,
      });

  // the rounds above leave events to position and outbox rows to publish: not on the next row's bill
  opts.log(`bench:   ${await drainEvents(opts.pool)}; ${await drainOutbox(opts.pool)}`);
  const soldOut = `LUS-${opts.runId}`;
  await createProduct(opts.srv, soldOut, 0);
  await lastunitRow('lastunit sold-out answers', 1, soldOut, 'lus', false);
  return rows;
}

const COLUMNS =
  'row                                        /s  x bare  server     pg  clients   box  WAL/answer  per commit  batch (server)   load';

function formatRow(r: CostRow): string {
  const ms = (x: number | null) => (x === null ? '-' : x.toFixed(3)).padStart(6);
  const batch = r.batch ? `${r.batch.size} in ${r.batch.ms} ms` : '-';
  return (
    `${r.label.padEnd(38)} ${String(Math.round(r.perS)).padStart(6)}  ${(r.vsBare === null ? '-' : r.vsBare.toFixed(2)).padStart(6)}` +
    `  ${ms(r.serverCpuMsPerAnswer)} ${ms(r.pgCpuMsPerAnswer)}   ${ms(r.clientsCpuMsPerAnswer)}` +
    `  ${(r.boxBusy === null ? '-' : `${Math.round(r.boxBusy * 100)}%`).padStart(4)}  ${`${Math.round(r.walBytesPerAnswer)} B`.padStart(10)}` +
    `  ${r.answersPerCommit.toFixed(2).padStart(10)}  ${batch.padEnd(15)}  ${r.load.toFixed(2).padStart(5)}` +
    `${r.errors ? `  ERRORS ${r.errors}` : ''}${r.problems?.length ? `  FAIL ${r.problems.join('; ')}` : ''}`
  );
}

/** The rows as the report prints them, with the capacity model's inputs named. */
export function formatBucketRows(rows: CostRow[]): string {
  return [
    `STOCK BUCKETS AND COSTS (${rows[0]?.clients ?? '?'} clients; /s: claims, or answers for sold-out; x bare: over pgbench's bare single-row claim)`,
    `  ${COLUMNS}`,
    ...rows.map((r) => `  ${formatRow(r)}`),
    "  per answer: ms of CPU of the server process, the bench database's PostgreSQL backends and the load generator;",
    "  box: the machine's CPU busy (all cores, everything on it); WAL: the whole server's (an upper bound); per commit:",
    "  the bench database's commits; batch: claims per claim transaction and its time, from the server's /metrics.",
    '  These are the inputs of the capacity model below (docs/capacity.md).',
    ...(rows.some((r) => r.problems)
      ? [
          `  lastunit rows checked in the database afterwards: ${rows.filter((r) => r.problems && !r.problems.length).length} of ` +
            `${rows.filter((r) => r.problems).length} with units conserved, 0 oversold, 0 duplicates, 0 false sold out`,
        ]
      : []),
  ].join('\n');
}
