// `npm run bench`: the flash sale of docs/architecture.md "How we prove it". placeOrder over HTTP against the real server (a child
// process), and in the same run on the same database the bare single-statement claim (ceiling) and a naive
// read-then-write (oversells), each as a hot SKU for a fixed time and as a flash sale of N buyers at M units.
//   BENCH_BUYERS (2000) BENCH_UNITS (100) BENCH_CONCURRENCY (64) BENCH_DURATION_S (10), or --buyers= --units=
//   --concurrency= --duration= --out=; DATABASE_URL: create lastunit_bench_* there (else an embedded PostgreSQL).
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import type pg from 'pg';
import { createBenchDatabase, type BenchDatabase } from './database.js';
import { openBenchPool } from './pg-load.js';
import { formatTable, writeResult, type BenchResult, type ScenarioResult } from './report.js';
import { baselineScenario, lastunitScenario, runOnce, type ScenarioContext } from './scenarios.js';
import { startServer, type ServerProcess } from './server.js';
import { round } from '../kit/stats.js';

export type { BenchResult, ScenarioResult };

export type BenchOptions = {
  /** a PostgreSQL URL to create the bench database on (as admin); absent: an embedded PostgreSQL in a temp dir */
  adminUrl?: string;
  buyers?: number;
  units?: number;
  concurrency?: number;
  durationS?: number;
  /** stock of the hot-SKU scenarios' SKUs */
  hotStock?: number;
  /** DATABASE_POOL_SIZE for the server; absent: the server's own default */
  serverPoolSize?: number;
  /** where the JSON goes (default bench/results/latest.json) */
  outFile?: string;
  /** the global safety timeout; past it everything is stopped and runBench rejects */
  timeoutMs?: number;
  signal?: AbortSignal;
  log?: (line: string) => void;
};

export const DEFAULT_OUT_FILE = path.join(path.dirname(fileURLToPath(import.meta.url)), 'results', 'latest.json');

function settle<T>(what: string, p: Promise<T>, ms: number, log: (s: string) => void): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<void>((resolve) => {
    timer = setTimeout(() => resolve(log(`cleanup: ${what} did not finish within ${ms} ms`)), ms);
  });
  return Promise.race([p.then(() => undefined, (err) => log(`cleanup: ${what} failed: ${(err as Error).message}`)), timeout]).finally(() =>
    clearTimeout(timer),
  );
}

/**
 * Runs every scenario once and writes the JSON result. Rejects on a fault (server did not start, safety timeout, ...);
 * a lastunit invariant failure is not a fault: it resolves with `ok: false` and the problems listed.
 * @example const r = await runBench({ adminUrl: process.env.DATABASE_URL, buyers: 150, units: 20, concurrency: 16, durationS: 1 })
 */
export async function runBench(opts: BenchOptions = {}): Promise<BenchResult> {
  const p = {
    buyers: opts.buyers ?? 2000,
    units: opts.units ?? 100,
    concurrency: opts.concurrency ?? 64,
    durationS: opts.durationS ?? 10,
    hotStock: opts.hotStock ?? 10_000_000,
    pgPoolSize: Math.min(opts.concurrency ?? 64, 64),
  };
  const log = opts.log ?? ((s: string) => console.error(s));
  const timeoutMs = opts.timeoutMs ?? (180 + 6 * p.durationS + Math.ceil(p.buyers / 10)) * 1000;
  const startedAt = new Date().toISOString();
  const loadStart = round(os.loadavg()[0]!, 2);
  const runId = `${Date.now().toString(36)}${randomBytes(2).toString('hex')}`;

  const ac = new AbortController();
  const onOuterAbort = () => ac.abort(new Error('stopped by the caller'));
  opts.signal?.addEventListener('abort', onOuterAbort, { once: true });
  const safety = setTimeout(() => ac.abort(new Error(`safety timeout: the bench took longer than ${timeoutMs} ms`)), timeoutMs);
  const aborted = new Promise<never>((_, reject) => ac.signal.addEventListener('abort', () => reject(ac.signal.reason), { once: true }));
  aborted.catch(() => {});

  let bdb: BenchDatabase | undefined;
  let pool: pg.Pool | undefined;
  let srv: ServerProcess | undefined;
  const step = <T>(what: string, f: () => Promise<T>): Promise<T> => {
    if (ac.signal.aborted) return Promise.reject(ac.signal.reason);
    log(`bench: ${what}`);
    return Promise.race([f(), aborted]);
  };
  try {
    bdb = await step(opts.adminUrl ? 'creating the bench database' : 'starting an embedded PostgreSQL', () =>
      createBenchDatabase({ adminUrl: opts.adminUrl, log }),
    );
    pool = await step(`opening ${p.pgPoolSize} pg connections`, () => openBenchPool(bdb!.url, p.pgPoolSize));
    const pgVersion = (await pool.query('SHOW server_version')).rows[0].server_version as string;
    srv = await step('starting the server (node --import tsx node/start.ts)', () =>
      startServer({
        databaseUrl: bdb!.url,
        extraEnv: opts.serverPoolSize ? { DATABASE_POOL_SIZE: String(opts.serverPoolSize) } : undefined,
        onUnexpectedExit: (why) => ac.abort(new Error(why)),
      }),
    );
    log(`bench: server pid ${srv.pid} on ${srv.endpoint}`);

    const ctx: ScenarioContext = { runId, pool, srv, concurrency: p.concurrency, signal: ac.signal };
    const flash = { mode: 'flash' as const, units: p.units };
    const hot = { mode: 'hot' as const, units: p.hotStock };
    const buyers = { amount: p.buyers };
    // Not reported in the table: JIT, the server's pool connections and PostgreSQL's caches warm up here, on both the
    // claim and the refusal path, so the flash sale measures a warm server (invariants are still checked).
    const warmupBuyers = Math.min(300, p.buyers);
    const warmup = await step(`warming up: ${warmupBuyers} placeOrders (not in the table)`, () =>
      runOnce(lastunitScenario(ctx, { mode: 'flash', tag: 'warmup', units: Math.ceil(warmupBuyers / 3), errorsAreWarnings: true }), {
        amount: warmupBuyers,
      }),
    );
    const done = (s: ScenarioResult) => {
      log(`bench:   -> ${s.label}: ${s.requests} requests, sold ${s.sold}, ${s.claimsPerS} claims/s, p50 ${s.p50Ms} ms, p99 ${s.p99Ms} ms`);
      return s;
    };
    const flashLastunit = done(await step(`lastunit flash sale: ${p.buyers} buyers at ${p.units} units`, () => runOnce(lastunitScenario(ctx, flash), buyers)));

    // The headline pair shares the machine with whatever else runs on it: alternate them (A B B A, half the duration
    // each) so drifting background load weighs on both alike.
    const [luHot, ceHot] = await step('creating the hot SKUs', () => Promise.all([lastunitScenario(ctx, hot), baselineScenario(ctx, 'ceiling', hot)]));
    const half = { durationS: p.durationS / 2 };
    for (const [name, sc] of [['lastunit', luHot], ['ceiling', ceHot], ['ceiling', ceHot], ['lastunit', luHot]] as const)
      await step(`${name} hot SKU, ${half.durationS} s round`, () => sc.round(half));
    const hotLastunit = done(await step('checking the hot SKUs', () => luHot.finish()));
    const hotCeiling = done(await ceHot.finish());

    const naiveHot = done(await step(`naive hot SKU for ${p.durationS} s`, () => runOnce(baselineScenario(ctx, 'naive', hot), { durationS: p.durationS })));
    const ceilingFlash = done(await step('ceiling flash sale', () => runOnce(baselineScenario(ctx, 'ceiling', flash), buyers)));
    const naiveFlash = done(await step('naive flash sale', () => runOnce(baselineScenario(ctx, 'naive', flash), buyers)));
    const scenarios = [flashLastunit, hotLastunit, hotCeiling, naiveHot, ceilingFlash, naiveFlash];

    for (const s of scenarios) {
      const base = s.mode === 'hot' ? hotCeiling.claimsPerS : ceilingFlash.requestsPerS;
      const mine = s.mode === 'hot' ? s.claimsPerS : s.requestsPerS;
      s.ratioToCeiling = base > 0 ? round(mine / base, 3) : null;
    }
    const problems = [warmup, ...scenarios].flatMap((s) => s.problems.map((x) => `${s.label}: ${x}`));
    const result: BenchResult = {
      version: 1,
      startedAt,
      finishedAt: new Date().toISOString(),
      ok: problems.length === 0,
      params: p,
      environment: {
        node: process.version,
        cpus: os.cpus().length,
        loadAvg: { start: loadStart, end: round(os.loadavg()[0]!, 2) },
        database: bdb.where,
        postgres: pgVersion,
        serverPoolSize: String(opts.serverPoolSize ?? process.env.DATABASE_POOL_SIZE ?? '20 (server default)'),
      },
      headline: { ratio: hotLastunit.ratioToCeiling, lastunitClaimsPerS: hotLastunit.claimsPerS, ceilingClaimsPerS: hotCeiling.claimsPerS },
      problems,
      scenarios,
      warmup,
    };
    if ([warmup, ...scenarios].some((s) => s.engine === 'lastunit' && s.errors > 0)) {
      result.serverOutputTail = srv.output().slice(-4000);
      log(`bench: the server printed (last lines):\n${result.serverOutputTail}`);
    }
    await writeResult(opts.outFile ?? DEFAULT_OUT_FILE, result);
    return result;
  } finally {
    clearTimeout(safety);
    opts.signal?.removeEventListener('abort', onOuterAbort);
    if (!ac.signal.aborted) ac.abort(new Error('bench finished'));  // stops any load still running after a fault
    if (srv) await settle('stopping the server', srv.stop(), 15_000, log);
    if (pool) await settle('closing the pg pool', pool.end(), 15_000, log);
    if (bdb) await settle(`dropping ${bdb.name}`, bdb.drop(), 30_000, log);
  }
}

function cliOptions(argv: string[], env: NodeJS.ProcessEnv): BenchOptions {
  const flags = new Map(
    argv.filter((a) => a.startsWith('--') && a.includes('=')).map((a) => [a.slice(2, a.indexOf('=')), a.slice(a.indexOf('=') + 1)] as const),
  );
  const num = (flag: string, name: string, min: number): number | undefined => {
    const v = flags.get(flag) ?? env[name];
    if (v === undefined || v === '') return undefined;
    const n = Number(v);
    if (!Number.isFinite(n) || n < min) throw new Error(`${name} / --${flag} must be a number >= ${min}, got "${v}"`);
    return n;
  };
  const int = (flag: string, name: string, min: number) => {
    const n = num(flag, name, min);
    if (n !== undefined && !Number.isInteger(n)) throw new Error(`${name} / --${flag} must be an integer, got ${n}`);
    return n;
  };
  return {
    adminUrl: env.DATABASE_URL || undefined,
    buyers: int('buyers', 'BENCH_BUYERS', 1),
    units: int('units', 'BENCH_UNITS', 1),
    concurrency: int('concurrency', 'BENCH_CONCURRENCY', 1),
    durationS: num('duration', 'BENCH_DURATION_S', 0.5),
    serverPoolSize: int('server-pool', 'BENCH_SERVER_POOL_SIZE', 1),
    outFile: flags.get('out') ?? env.BENCH_OUT,
  };
}

async function main() {
  const opts = cliOptions(process.argv.slice(2), process.env);
  const ac = new AbortController();
  for (const sig of ['SIGINT', 'SIGTERM'] as const) process.once(sig, () => ac.abort());
  const result = await runBench({ ...opts, signal: ac.signal });
  console.log(`\n${formatTable(result)}`);
  console.log(`\nJSON: ${path.relative(process.cwd(), opts.outFile ?? DEFAULT_OUT_FILE)}`);
  return result.ok ? 0 : 1;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main().then(
    (code) => process.exit(code),
    (err) => {
      console.error(`bench failed: ${err instanceof Error ? err.stack ?? err.message : String(err)}`);
      process.exit(2);
    },
  );
}
