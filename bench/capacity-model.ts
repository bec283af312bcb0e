// The capacity model of docs/capacity.md, worked out from one bench run's stock-bucket rows: how many claims/s one
// hot SKU gets with 1-32 stock buckets on 2, 8 and 32 cores, what runs out first, and how well the model explains the
// rows this machine measured. Pure arithmetic on the rows (bench/buckets.ts), so any run re-derives it.
import type { CostRow } from './buckets.js';

export const MODEL_CORES = [2, 8, 32] as const;
export const MODEL_BUCKETS = [1, 2, 4, 8, 16, 32] as const;

/** What runs out first in a cell: the CPU of the cores, or the commits of the SKU's rows. */
export type Limit = 'CPU' | 'rows';

export type CapacityInputs = {
  /** pgbench's bare single-row claim, one claim per commit (claims/s = the row's commits/s) */
  bareClaimsPerS: number;
  /** pgbench's bare single-row claim with `k` claims per commit (lastunit's batch size), when the run measured it */
  sharedCommits: { k: number; claimsPerS: number } | null;
  /** commits/s one row takes: at `sharedCommits.k` claims per commit when measured, else the bare claim's */
  rowCommitsPerS: number;
  /** lastunit over HTTP per bucket count: CPU ms per claim (server + PostgreSQL) and claims per batch commit */
  claim: { buckets: number; serverMs: number; postgresMs: number; perCommit: number; walBytes: number }[];
  /** a sold-out answer's CPU ms (server + PostgreSQL) */
  refusalMs: number | null;
  /** PostgreSQL alone running lastunit's batch statement (pgbench, one stream of batches per stock row): claims/s */
  sqlOnly: { buckets: number; claimsPerS: number }[];
};

export type CapacityCell = { cores: number; buckets: number; claimsPerS: number; limit: Limit };

export type BoxCheck = {
  buckets: number;
  /** the model on this machine's cores, with the load generator's CPU counted (it ran on the same cores) */
  modelClaimsPerS: number;
  limit: Limit;
  measuredClaimsPerS: number;
  /** the machine's CPU busy in that round, 0-1 */
  boxBusy: number | null;
};

export type CapacityModel = {
  inputs: CapacityInputs;
  cells: CapacityCell[];
  /** per host, every SKU together: claims/s and sold-out answers/s the cores pay for */
  perHost: { cores: number; claimsPerS: number; refusalsPerS: number | null }[];
  /**
   * claims/s one host process serves on one core's worth of its CPU (1000 / server ms per claim): its JavaScript runs
   * on one core, so a box that should sell more runs more processes (WEB_CONCURRENCY)
   */
  perProcessClaimsPerS: number;
  thisBox: { cores: number; rows: BoxCheck[] };
};

const lastunitRow = /^lastunit hot SKU, /;

/**
 * The model from a run's rows, or null when the run has no single-row pgbench claim or no lastunit hot-SKU row.
 * claims/s(n buckets, C cores) = min(C x 1000 / (server + PostgreSQL ms per claim), n x row commits/s x claims per
 * commit), each input taken from the measured row with the nearest bucket count at or below n.
 * @example const model = capacityModel(result.buckets, os.cpus().length); if (model) console.log(formatCapacityModel(model))
 */
export function capacityModel(rows: CostRow[], boxCores: number): CapacityModel | null {
  const bare = rows.find((r) => r.label === 'pgbench bare claim, 1 row');
  const shared = rows.find((r) => /^pgbench bare claim, 1 row, \d+ per commit$/.test(r.label));
  const measured = rows
    .filter((r) => lastunitRow.test(r.label) && r.serverCpuMsPerAnswer !== null && r.claims > 0)
    .sort((a, b) => a.buckets - b.buckets);
  if (!bare || bare.perS <= 0 || !measured.length) return null;
  const k = shared ? Number(/, (\d+) per commit$/.exec(shared.label)![1]) : 1;
  const sharedCommits = shared && shared.perS > 0 ? { k, claimsPerS: shared.perS } : null;
  const claim = measured.map((r) => ({
    buckets: r.buckets,
    serverMs: r.serverCpuMsPerAnswer!,
    postgresMs: r.pgCpuMsPerAnswer,
    perCommit: r.batch?.size ?? r.answersPerCommit,
    walBytes: r.walBytesPerAnswer,
  }));
  const soldOut = rows.find((r) => r.label === 'lastunit sold-out answers');
  const inputs: CapacityInputs = {
    bareClaimsPerS: bare.perS,
    sharedCommits,
    // the row's commits at lastunit's own batch size when the run measured them (a larger commit takes longer)
    rowCommitsPerS: sharedCommits ? sharedCommits.claimsPerS / k : bare.perS,
    claim,
    refusalMs:
      soldOut && soldOut.serverCpuMsPerAnswer !== null ? soldOut.serverCpuMsPerAnswer + soldOut.pgCpuMsPerAnswer : null,
    sqlOnly: rows
      .filter((r) => r.label.startsWith('pgbench lastunit batches, '))
      .map((r) => ({ buckets: r.buckets, claimsPerS: r.perS })),
  };
  const costOf = (n: number) => [...claim].reverse().find((c) => c.buckets <= n) ?? claim[0]!;
  const cell = (cores: number, buckets: number, extraMs = 0) => {
    const c = costOf(buckets);
    const cpu = (cores * 1000) / (c.serverMs + c.postgresMs + extraMs);
    const commits = buckets * inputs.rowCommitsPerS * c.perCommit;
    return cpu <= commits
      ? { claimsPerS: Math.round(cpu), limit: 'CPU' as const }
      : { claimsPerS: Math.round(commits), limit: 'rows' as const };
  };
  const one = claim[0]!;
  return {
    inputs,
    cells: MODEL_CORES.flatMap((cores) =>
      MODEL_BUCKETS.map((buckets) => ({ cores, buckets, ...cell(cores, buckets) })),
    ),
    perHost: MODEL_CORES.map((cores) => ({
      cores,
      claimsPerS: Math.round((cores * 1000) / (one.serverMs + one.postgresMs)),
      refusalsPerS: inputs.refusalMs ? Math.round((cores * 1000) / inputs.refusalMs) : null,
    })),
    perProcessClaimsPerS: Math.round(1000 / one.serverMs),
    thisBox: {
      cores: boxCores,
      rows: measured.map((r) => ({
        buckets: r.buckets,
        ...((m) => ({ modelClaimsPerS: m.claimsPerS, limit: m.limit }))(
          cell(boxCores, r.buckets, r.clientsCpuMsPerAnswer),
        ),
        measuredClaimsPerS: r.perS,
        boxBusy: r.boxBusy,
      })),
    },
  };
}

const num = (n: number) => Math.round(n).toLocaleString('en-US');

/** The model as the bench prints it: its inputs, the table, per host, and the check against this machine's rows. */
export function formatCapacityModel(m: CapacityModel): string {
  const i = m.inputs;
  const cellText = (cores: number, buckets: number) => {
    const c = m.cells.find((x) => x.cores === cores && x.buckets === buckets)!;
    return `${num(c.claimsPerS)} ${c.limit}`.padStart(14);
  };
  // the WAL column is the whole server's (an upper bound: other databases, checkpoints): the lowest row is the closest
  const walBytes = Math.min(...i.claim.map((c) => c.walBytes));
  const wal = (cores: number, buckets: number) => {
    const c = m.cells.find((x) => x.cores === cores && x.buckets === buckets)!;
    const cost = [...i.claim].reverse().find((x) => x.buckets <= buckets) ?? i.claim[0]!;
    return `up to ${num((c.claimsPerS * walBytes) / 1e6)} MB/s of WAL (${num(walBytes)} B per claim, this run's lowest), ${num(c.claimsPerS / cost.perCommit)} commits/s`;
  };

  return [
    'CAPACITY MODEL (docs/capacity.md), from this run: claims/s for one hot SKU, server and PostgreSQL on the cores, the load elsewhere',
    `  = min(cores x 1000 / CPU ms per claim, buckets x ${num(i.rowCommitsPerS)} commits/s per row x claims per commit)`,
    `  one row commits ${num(i.rowCommitsPerS)} times/s: pgbench bare claim ${num(i.bareClaimsPerS)}/s at 1 per commit` +
      (i.sharedCommits
        ? `, ${num(i.sharedCommits.claimsPerS)}/s at ${i.sharedCommits.k} per commit (${num(i.sharedCommits.claimsPerS / i.sharedCommits.k)} commits/s)`
        : ''),
    ...i.claim.map(
      (c) =>
        `  lastunit, ${c.buckets === 1 ? '1 row    ' : `${c.buckets} buckets`.padEnd(9)}: ${(c.serverMs + c.postgresMs).toFixed(3)} ms per claim ` +
        `(server ${c.serverMs.toFixed(3)}, PostgreSQL ${c.postgresMs.toFixed(3)}), ${c.perCommit} claims per commit, ${num(c.walBytes)} B of WAL`,
    ),
    `  buckets ${MODEL_CORES.map((c) => `${c} cores`.padStart(14)).join('')}`,
    ...MODEL_BUCKETS.map((b) => `  ${String(b).padStart(7)} ${MODEL_CORES.map((c) => cellText(c, b)).join('')}`),
    `  per host, every SKU together: claims/s ${m.perHost.map((h) => num(h.claimsPerS)).join(' / ')}` +
      (m.perHost[0]!.refusalsPerS !== null
        ? `, sold-out answers/s ${m.perHost.map((h) => num(h.refusalsPerS!)).join(' / ')}`
        : '') +
      ` (${MODEL_CORES.join(' / ')} cores)`,
    `  one host process: about ${num(m.perProcessClaimsPerS)} claims/s on one core of CPU (its JavaScript runs on one): above that, WEB_CONCURRENCY processes`,
    `  at 32 cores and 32 buckets: ${wal(32, 32)}`,
    ...(i.sqlOnly.length
      ? [
          `  PostgreSQL alone, lastunit's batch statement without the HTTP path (pgbench, a stream per stock row): ` +
            i.sqlOnly
              .map((x) => `${x.buckets === 1 ? '1 row' : `${x.buckets} buckets`} ${num(x.claimsPerS)}/s`)
              .join(', '),
        ]
      : []),
    `  this machine (${m.thisBox.cores} cores, its load generator on them too): ` +
      m.thisBox.rows
        .map(
          (r) =>
            `${r.buckets === 1 ? '1 row' : `${r.buckets} buckets`} model ${num(r.modelClaimsPerS)} ${r.limit}, measured ${num(r.measuredClaimsPerS)}` +
            (r.boxBusy === null ? '' : ` at ${Math.round(r.boxBusy * 100)}% busy`),
        )
        .join('; '),
  ].join('\n');
}
