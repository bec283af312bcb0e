// The bench's stock-bucket rows (`npm run bench -- --buckets 1,2,4,8`) and the capacity model's inputs
// (docs/capacity.md): per bucket count, the hot SKU over HTTP at `clients` clients with that many stock rows; beside
// them pgbench's bare single-row claim and its bare bucketed claim (what PostgreSQL can do without the HTTP path), and
// sold-out answers. Every row carries what it cost: server CPU and PostgreSQL CPU per answer (ms), WAL bytes per
// answer and answers per commit, with the machine's 1-minute load when it ran.
//   server CPU:     the server process's utime + stime (/proc/<pid>/stat) over the round;
//   PostgreSQL CPU: every postgres process's utime + stime plus the postmaster's reaped children (cutime + cstime),
//                   so the backends pgbench opens and closes count too. The server is shared: other databases' work on
//                   it counts as well, so this is an upper bound on a busy machine;
//   WAL:            pg_current_wal_lsn() before and after (the whole server's WAL, likewise an upper bound);
//   commits:        xact_commit of the bench database (pg_stat_database), its answers per commit are the batching.
import os from 'node:os';
import { readdir, readFile } from 'node:fs/promises';
import type pg from 'pg';
import { createProduct, runPlaceOrderLoad } from './http-load.js';
import { BUCKET_CLAIM_SCRIPT, runPgbench } from './pgbench.js';
import type { ServerProcess } from './server.js';
import { round } from '../kit/stats.js';

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
  walBytesPerAnswer: number;
  answersPerCommit: number;
  /** 1-minute load average at the end of the round */
  load: number;
  errors: number;
};

const TICK_MS = 1000 / 100; // USER_HZ: /proc counts CPU in 1/100 s on Linux

async function cpuMsOf(pid: number, children = false): Promise<number> {
  try {
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' '); // fields from 3 on (the name may hold spaces)
    const own = Number(f[11]) + Number(f[12]); // utime, stime (fields 14, 15)
    return (own + (children ? Number(f[13]) + Number(f[14]) : 0)) * TICK_MS; // cutime, cstime (16, 17)
  } catch {
    return 0; // gone meanwhile
  }
}

/** CPU ms of every postgres process now, plus what the postmaster's reaped children used (their backends gone). */
async function postgresCpuMs(): Promise<number> {
  const procs: { pid: number; ppid: number }[] = [];
  for (const name of await readdir('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = await readFile(`/proc/${name}/stat`, 'utf8');
      if (stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')) !== 'postgres') continue;
      procs.push({ pid: Number(name), ppid: Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) });
    } catch {
      // gone meanwhile
    }
  }
  const pids = new Set(procs.map((p) => p.pid));
  let total = 0;
  for (const p of procs) total += await cpuMsOf(p.pid, !pids.has(p.ppid)); // the postmaster: its parent is not postgres
  return total;
}

type Mark = { at: bigint; serverMs: number; pgMs: number; lsn: string; commits: number };

async function mark(pool: pg.Pool, serverPid: number | null): Promise<Mark> {
  const { rows } = await pool.query(
    `SELECT pg_current_wal_lsn()::text AS lsn,
            (SELECT xact_commit FROM pg_stat_database WHERE datname = current_database())::bigint AS commits`,
  );
  return {
    at: process.hrtime.bigint(),
    serverMs: serverPid ? await cpuMsOf(serverPid) : 0,
    pgMs: await postgresCpuMs(),
    lsn: rows[0].lsn,
    commits: Number(rows[0].commits),
  };
}

async function costs(pool: pg.Pool, a: Mark, b: Mark, answers: number, withServer: boolean) {
  const { rows } = await pool.query('SELECT pg_wal_lsn_diff($1::pg_lsn, $2::pg_lsn)::float8 AS wal', [b.lsn, a.lsn]);
  const per = (x: number) => (answers > 0 ? x / answers : 0);
  return {
    elapsedS: Number(b.at - a.at) / 1e9,
    serverCpuMsPerAnswer: withServer ? round(per(b.serverMs - a.serverMs), 3) : null,
    pgCpuMsPerAnswer: round(per(b.pgMs - a.pgMs), 3),
    walBytesPerAnswer: round(per(Number(rows[0].wal))),
    // the measuring statements' own commits are left out
    answersPerCommit: round(answers / Math.max(1, b.commits - a.commits - 1), 2),
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

async function setBuckets(srv: ServerProcess, sku: string, buckets: number) {
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
    const full = { ...r, vsBare: bare ? round(r.perS / bare.perS, 3) : null, load: load() };
    opts.log(`bench:   -> ${formatRow(full)}`);
    rows.push(full);
    return full;
  };

  for (const n of [1, ...opts.buckets.filter((b) => b > 1)]) {
    const sku = `PGB-${n}-${opts.runId}`;
    await createProduct(opts.srv, sku, stock);
    if (n > 1) await setBuckets(opts.srv, sku, n);
    const script = n > 1 ? { script: BUCKET_CLAIM_SCRIPT, vars: { buckets: n } } : {};
    const a = await mark(opts.pool, null);
    const o = await runPgbench({
      url: opts.url,
      pool: opts.pool,
      sku,
      clients: opts.clients,
      durationS: opts.durationS,
      signal: opts.signal,
      ...script,
    });
    const b = await mark(opts.pool, null);
    const c = await costs(opts.pool, a, b, o.claimed + o.refused, false);
    row({
      label: n > 1 ? `pgbench bare claim, ${n} buckets` : 'pgbench bare claim, 1 row',
      buckets: n,
      clients: opts.clients,
      answers: o.claimed + o.refused,
      claims: o.claimed,
      perS: round(o.claimed / o.elapsedS),
      errors: o.errors,
      ...c,
    });
  }

  for (const n of opts.buckets) {
    const sku = `LUB-${n}-${opts.runId}`;
    await createProduct(opts.srv, sku, stock);
    if (n > 1) await setBuckets(opts.srv, sku, n);
    // warm: the pool's connections and their plans for this SKU's path
    await runPlaceOrderLoad({ srv: opts.srv, sku, keyPrefix: `lub${n}w`, connections: opts.clients, amount: 300 });
    const a = await mark(opts.pool, opts.srv.pid);
    const o = await runPlaceOrderLoad({
      srv: opts.srv,
      sku,
      keyPrefix: `lub${n}`,
      connections: opts.clients,
      durationS: opts.durationS,
    });
    const b = await mark(opts.pool, opts.srv.pid);
    const answers = o.claimed + o.refused;
    const c = await costs(opts.pool, a, b, answers, true);
    row({
      label: `lastunit hot SKU, ${n === 1 ? '1 row' : `${n} buckets`}`,
      buckets: n,
      clients: opts.clients,
      answers,
      claims: o.claimed,
      perS: round(o.claimed / c.elapsedS),
      errors: o.errors,
      ...c,
    });
  }

  const soldOut = `LUS-${opts.runId}`;
  await createProduct(opts.srv, soldOut, 0);
  const a = await mark(opts.pool, opts.srv.pid);
  const o = await runPlaceOrderLoad({
    srv: opts.srv,
    sku: soldOut,
    keyPrefix: 'lus',
    connections: opts.clients,
    durationS: opts.durationS,
  });
  const b = await mark(opts.pool, opts.srv.pid);
  const answers = o.claimed + o.refused;
  const c = await costs(opts.pool, a, b, answers, true);
  row({
    label: 'lastunit sold-out answers',
    buckets: 1,
    clients: opts.clients,
    answers,
    claims: o.claimed,
    perS: round(answers / c.elapsedS),
    errors: o.errors,
    ...c,
  });
  return rows;
}

function formatRow(r: CostRow): string {
  return (
    `${r.label.padEnd(34)} ${String(Math.round(r.perS)).padStart(6)}/s  x${r.vsBare ?? '-'} of bare  ` +
    `server ${r.serverCpuMsPerAnswer ?? '-'} ms  pg ${r.pgCpuMsPerAnswer} ms  WAL ${r.walBytesPerAnswer} B  ` +
    `${r.answersPerCommit}/commit  load ${r.load}${r.errors ? `  ERRORS ${r.errors}` : ''}`
  );
}

/** The rows as the report prints them, with the capacity model's inputs named. */
export function formatBucketRows(rows: CostRow[]): string {
  return [
    `STOCK BUCKETS AND COSTS (${rows[0]?.clients ?? '?'} clients; per answer: server CPU, PostgreSQL CPU, WAL bytes; answers per commit; 1-min load)`,
    ...rows.map((r) => `  ${formatRow(r)}`),
    '  costs are inputs of docs/capacity.md; PostgreSQL CPU and WAL count the whole shared server (an upper bound)',
  ].join('\n');
}
