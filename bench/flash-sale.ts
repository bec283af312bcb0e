// `npm run bench`: the flash sale of docs/architecture.md "How we prove it". placeOrder over HTTP against the real server (a child
// process), and in the same run on the same database the bare single-statement claim (ceiling: pgbench -M prepared
// when installed, else through `pg` here) and a naive read-then-write (oversells), each as a hot SKU for a fixed time
// (placeOrder also on a host of 2 processes, WEB_CONCURRENCY=2, beside the one of 1) and as a flash sale of N buyers at M units; the hot SKU again at 1/4/16 clients for the chart; our trivial
// `{ __typename }` against a bare graphql-yoga on node:http and against sold-out placeOrder answers; live fan-out
// freshness. Prints progress while it runs, the table and four ratios; writes the JSON and the SVG chart under
// bench/results/ (git-ignored); `--update-docs` also copies the chart to docs/bench.svg, the README's.
//   BENCH_BUYERS (2000) BENCH_UNITS (100) BENCH_CONCURRENCY (64) BENCH_DURATION_S (10) BENCH_CHART_DURATION_S (3)
//   BENCH_SUBSCRIBERS (10000) BENCH_SALES (50) BENCH_CHART_CLIENTS (1,4,16), or --buyers= --units= --concurrency=
//   --duration= --chart-clients= --out= --svg=;
//   BENCH_BUCKETS (1,2,4,8; none) BENCH_BUCKET_DURATION_S (4), or --buckets 1,2,4,8: the stock-bucket rows (bench/buckets.ts)
//   BENCH_PASSES (2), or --passes=: how many times the cheap answers' rounds run (ratios 2 and 3)
//   BENCH_CEILING=pg forces the pg ceiling; DATABASE_URL: create lastunit_bench_* there (else an embedded PostgreSQL).
// Bounded: a safety timeout stops everything; every server it starts listens on 127.0.0.1 and is stopped at the end.
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import type pg from 'pg';
import { createBenchDatabase, drainOutbox, settleDatabase, type BenchDatabase } from './database.js';
import { openBenchPool } from './pg-load.js';
import { copyFile, writeFile, mkdir } from 'node:fs/promises';
import { formatTable, writeResult, type BenchResult, type ClientsRow, type ScenarioResult } from './report.js';
import { baselineScenario, lastunitScenario, runOnce, type ScenarioContext } from './scenarios.js';
import { startServer, type ServerProcess } from './server.js';
import { round } from '../kit/stats.js';
import { spawnServer } from '../kit/server.js';
import { pgbenchVersion } from './pgbench.js';
import { runBucketRows } from './buckets.js';
import { capacityModel } from './capacity-model.js';
import { classifyTrivial, createProduct, runHttpLoad, runPlaceOrderLoad, TRIVIAL_BODY } from './http-load.js';
import { mergeOutcome, newOutcome, type LoadOutcome } from './load-outcome.js';
import { FRESHNESS_TARGET_MS, formatFanout, runFanoutProcess } from './fanout.js';
import { renderChart } from './chart.js';

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
  /** where the SVG chart goes (default: beside the JSON, bench/results/latest.svg) */
  svgFile?: string;
  /** the chart's other client counts (the headline's concurrency is always one): default 1, 4, 16 */
  chartClients?: number[];
  /** seconds per chart point and engine (default 3) */
  chartDurationS?: number;
  /** live fan-out: subscribers and sales (default 10000 and 50) */
  fanout?: { subscribers: number; sales: number };
  /** what runs the ceiling (default: pgbench when installed, else pg) */
  ceiling?: 'pgbench' | 'pg';
  /** stock-bucket rows (bench/buckets.ts): the bucket counts (default 1, 2, 4, 8; [] for none), seconds per row (4) */
  buckets?: number[];
  bucketDurationS?: number;
  /** how many times the cheap answers' rounds (T B S S B T) run (default 2: one pass swings a ratio by +-0.1 here) */
  passes?: number;
  /** the global safety timeout; past it everything is stopped and runBench rejects */
  timeoutMs?: number;
  signal?: AbortSignal;
  log?: (line: string) => void;
};

export const DEFAULT_OUT_FILE = path.join(path.dirname(fileURLToPath(import.meta.url)), 'results', 'latest.json');
/** The README's chart: written only by `npm run bench -- --update-docs`, so a plain run leaves the tree as it was. */
export const DOCS_SVG_FILE = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'docs', 'bench.svg');

/** The hot SKU on a host of 2 processes: its tag (SKU, keys, row id) and its row's label. */
export const TWO_PROCESSES = { tag: 'hot-2p', label: 'hot SKU: placeOrder over HTTP, 2 processes' };

const BARE_READY = /bare yoga listening on http:\/\/127\.0\.0\.1:(?<port>\d+)\/graphql/;

function settle<T>(what: string, p: Promise<T>, ms: number, log: (s: string) => void): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<void>((resolve) => {
    timer = setTimeout(() => resolve(log(`cleanup: ${what} did not finish within ${ms} ms`)), ms);
  });
  return Promise.race([
    p.then(
      () => undefined,
      (err) => log(`cleanup: ${what} failed: ${(err as Error).message}`),
    ),
    timeout,
  ]).finally(() => clearTimeout(timer));
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
    chartClients: [
      ...new Set([
        ...(opts.chartClients ?? [1, 4, 16]).filter((c) => c < (opts.concurrency ?? 64)),
        opts.concurrency ?? 64,
      ]),
    ].sort((a, b) => a - b),
    chartDurationS: opts.chartDurationS ?? 3,
    fanout: opts.fanout ?? { subscribers: 10_000, sales: 50 },
  };
  const log = opts.log ?? ((s: string) => console.error(s));
  const version = opts.ceiling === 'pg' ? null : pgbenchVersion();
  if (opts.ceiling === 'pgbench' && !version)
    throw new Error('pgbench is not installed (apt-get install postgresql-client)');
  const ceilingVia: 'pgbench' | 'pg' = version ? 'pgbench' : 'pg';
  const timeoutMs =
    opts.timeoutMs ??
    (240 +
      10 * p.durationS +
      3 * p.chartClients.length * (p.chartDurationS + 3) +
      Math.ceil(p.buyers / 10) +
      Math.ceil(p.fanout.subscribers / 20)) *
      1000;
  const startedAt = new Date().toISOString();
  const loadStart = round(os.loadavg()[0]!, 2);
  const runId = `${Date.now().toString(36)}${randomBytes(2).toString('hex')}`;

  const ac = new AbortController();
  const onOuterAbort = () => ac.abort(new Error('stopped by the caller'));
  opts.signal?.addEventListener('abort', onOuterAbort, { once: true });
  const safety = setTimeout(
    () => ac.abort(new Error(`safety timeout: the bench took longer than ${timeoutMs} ms`)),
    timeoutMs,
  );
  const aborted = new Promise<never>((_, reject) =>
    ac.signal.addEventListener('abort', () => reject(ac.signal.reason), { once: true }),
  );
  aborted.catch(() => {});

  let bdb: BenchDatabase | undefined;
  let pool: pg.Pool | undefined;
  // The pg load pool (naive claims, and the ceiling without pgbench) is opened when a pg round needs it and closed
  // before a pgbench round, so the two never hold their connections at once (PostgreSQL's max_connections).
  let loadPool: pg.Pool | undefined;
  const freeLoadPool = async () => {
    const lp = loadPool;
    loadPool = undefined;
    await lp?.end();
  };
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
    pool = await step('opening 2 pg connections (setup and checks)', () => openBenchPool(bdb!.url, 2));
    const getLoadPool = async () => (loadPool ??= await openBenchPool(bdb!.url, p.pgPoolSize));
    const pgVersion = (await pool.query('SHOW server_version')).rows[0].server_version as string;
    srv = await step('starting the server (node --import tsx node/start.ts)', () =>
      startServer({
        databaseUrl: bdb!.url,
        extraEnv: opts.serverPoolSize ? { DATABASE_POOL_SIZE: String(opts.serverPoolSize) } : undefined,
        onUnexpectedExit: (why) => ac.abort(new Error(why)),
      }),
    );
    log(`bench: server pid ${srv.pid} on ${srv.endpoint}`);

    log(
      `bench: the ceiling runs through ${ceilingVia === 'pgbench' ? version : 'pg in this process (pgbench is not installed)'}`,
    );
    const progress = (line: string) => log(`bench:     ${line}`);
    const ctx: ScenarioContext = {
      runId,
      pool,
      srv,
      concurrency: p.concurrency,
      signal: ac.signal,
      dbUrl: bdb.url,
      ceilingVia,
      progress,
      loadPool: getLoadPool,
      freeLoadPool,
    };
    const flash = { mode: 'flash' as const, units: p.units };
    const hot = { mode: 'hot' as const, units: p.hotStock };
    const buyers = { amount: p.buyers };
    // Not reported in the table: JIT, the server's pool connections and PostgreSQL's caches warm up here, on both the
    // claim and the refusal path, so the flash sale measures a warm server (invariants are still checked).
    const warmupBuyers = Math.min(300, p.buyers);
    const warmup = await step(`warming up: ${warmupBuyers} placeOrders (not in the table)`, () =>
      runOnce(
        lastunitScenario(ctx, {
          mode: 'flash',
          tag: 'warmup',
          units: Math.ceil(warmupBuyers / 3),
          errorsAreWarnings: true,
        }),
        {
          amount: warmupBuyers,
        },
      ),
    );
    const done = (s: ScenarioResult) => {
      log(
        `bench:   -> ${s.label}: ${s.requests} requests, sold ${s.sold}, ${s.claimsPerS} claims/s, p50 ${s.p50Ms} ms, p99 ${s.p99Ms} ms`,
      );
      return s;
    };
    const flashLastunit = done(
      await step(`lastunit flash sale: ${p.buyers} buyers at ${p.units} units`, () =>
        runOnce(lastunitScenario(ctx, flash), buyers),
      ),
    );

    // The headline pair shares the machine with whatever else runs on it: alternate them (A B B A, half the duration
    // each) so drifting background load weighs on both alike.
    // The same hot SKU on a host of 2 processes (WEB_CONCURRENCY=2, node:cluster, one port), alternated with the rest.
    const srv2 = await step('starting a host of 2 processes (WEB_CONCURRENCY=2)', () =>
      startServer({
        databaseUrl: bdb!.url,
        // half the pool each: the two processes hold as many connections as the one (PostgreSQL's max_connections);
        // no relay (the 1-process host's relay publishes the outbox of both; more processes need Redis for theirs)
        extraEnv: {
          RELAY: 'off',
          WEB_CONCURRENCY: '2',
          DATABASE_POOL_SIZE: String(Math.max(1, Math.floor((opts.serverPoolSize ?? 20) / 2))),
        },
        onUnexpectedExit: (why) => ac.abort(new Error(why)),
      }),
    );
    let hotLastunit: ScenarioResult;
    let hotTwo: ScenarioResult;
    let hotCeiling: ScenarioResult;
    try {
      // a run id of its own: the scenarios count their key rows by prefix (runId-tag)
      const ctx2: ScenarioContext = { ...ctx, srv: srv2, runId: `${runId}p2` };
      const [luHot, ceHot, luHot2] = await step('creating the hot SKUs', () =>
        Promise.all([
          lastunitScenario(ctx, hot),
          baselineScenario(ctx, 'ceiling', hot),
          lastunitScenario(ctx2, { ...hot, ...TWO_PROCESSES }),
        ]),
      );
      const half = { durationS: p.durationS / 2 };
      for (const [name, sc] of [
        ['lastunit', luHot],
        ['lastunit on 2 processes', luHot2],
        ['ceiling', ceHot],
        ['ceiling', ceHot],
        ['lastunit on 2 processes', luHot2],
        ['lastunit', luHot],
      ] as const)
        await step(`${name} hot SKU, ${half.durationS} s round`, () => sc.round(half));
      hotLastunit = done(await step('checking the hot SKUs', () => luHot.finish()));
      hotTwo = done(await luHot2.finish());
      hotCeiling = done(await ceHot.finish());
    } finally {
      await settle('stopping the 2-process host', srv2.stop(), 15_000, log);
    }

    // The stock-bucket rows and the capacity model's costs (docs/capacity.md), beside the single-row pair above
    const bucketCounts = opts.buckets ?? [1, 2, 4, 8];
    await freeLoadPool(); // pgbench opens its own connections
    const bucketRows = bucketCounts.length
      ? await step(`stock buckets ${bucketCounts.join(',')} and costs`, () =>
          runBucketRows({
            srv: srv!,
            pool: pool!,
            url: bdb!.url,
            runId,
            buckets: bucketCounts,
            clients: p.concurrency,
            durationS: opts.bucketDurationS ?? 4,
            signal: ac.signal,
            log,
          }),
        )
      : [];

    const naiveHot = done(
      await step(`naive hot SKU for ${p.durationS} s`, () =>
        runOnce(baselineScenario(ctx, 'naive', hot), { durationS: p.durationS }),
      ),
    );
    const ceilingFlash = done(
      await step('ceiling flash sale', () => runOnce(baselineScenario(ctx, 'ceiling', flash), buyers)),
    );
    const naiveFlash = done(
      await step('naive flash sale', () => runOnce(baselineScenario(ctx, 'naive', flash), buyers)),
    );
    const scenarios = [flashLastunit, hotLastunit, hotTwo, hotCeiling, naiveHot, ceilingFlash, naiveFlash];

    for (const s of scenarios) {
      const base = s.mode === 'hot' ? hotCeiling.claimsPerS : ceilingFlash.requestsPerS;
      const mine = s.mode === 'hot' ? s.claimsPerS : s.requestsPerS;
      s.ratioToCeiling = base > 0 ? round(mine / base, 3) : null;
    }
    // The chart: the hot SKU at fewer clients, each engine for chartDurationS (the headline's concurrency is the row above).
    const byClients: ClientsRow[] = [];
    const chartExtra: ScenarioResult[] = [];
    const point = (s: ScenarioResult) => ({ claimsPerS: s.claimsPerS, p50Ms: s.p50Ms, p99Ms: s.p99Ms });
    for (const clients of p.chartClients) {
      if (clients === p.concurrency) {
        byClients.push({ clients, lastunit: point(hotLastunit), ceiling: point(hotCeiling), naive: point(naiveHot) });
        continue;
      }
      const c = { ...ctx, concurrency: clients, runId: `${runId}c${clients}` };
      const dur = { durationS: p.chartDurationS };
      const lu = done(
        await step(`chart: lastunit hot SKU at ${clients} clients for ${dur.durationS} s`, () =>
          runOnce(lastunitScenario(c, hot), dur),
        ),
      );
      const ce = done(
        await step(`chart: ceiling at ${clients} clients`, () => runOnce(baselineScenario(c, 'ceiling', hot), dur)),
      );
      const na = done(
        await step(`chart: naive at ${clients} clients`, () => runOnce(baselineScenario(c, 'naive', hot), dur)),
      );
      chartExtra.push(lu);
      byClients.push({ clients, lastunit: point(lu), ceiling: point(ce), naive: point(na) });
    }

    // Cheap answers: our trivial query, a bare graphql-yoga on node:http (a child process), sold-out placeOrder answers;
    // alternated (T B S S B T, twice), a quarter of the duration each, so drifting background load weighs on all alike.
    const bare = await step('starting a bare graphql-yoga on node:http (node --import tsx bench/bare-yoga.ts)', () =>
      spawnServer({
        script: 'bench/bare-yoga.ts',
        ready: BARE_READY,
        onUnexpectedExit: (why) => ac.abort(new Error(why)),
      }),
    );
    log(`bench: ${await settleDatabase(pool!)}`);
    const soldOutSku = `LU-soldout-${runId}`;
    await createProduct(srv, soldOutSku, 0);
    const cheap = { trivial: newOutcome(), bare: newOutcome(), soldOut: newOutcome() };
    const quarter = Math.max(0.5, p.durationS / 4);
    let soldOutRound = 0;
    try {
      // twice over by default: on this kind of shared box one pass swings a ratio by +-0.1 between runs
      const pass = ['trivial', 'bare', 'soldOut', 'soldOut', 'bare', 'trivial'] as const;
      for (const which of Array.from({ length: Math.max(1, opts.passes ?? 2) }, () => pass).flat()) {
        const o: LoadOutcome = await step(
          `${which === 'soldOut' ? 'sold-out placeOrder' : which === 'bare' ? 'bare graphql-yoga { __typename }' : 'our { __typename }'}, ${quarter} s round`,
          () =>
            which === 'soldOut'
              ? runPlaceOrderLoad({
                  srv: srv!,
                  sku: soldOutSku,
                  keyPrefix: `${runId}-soldout-r${++soldOutRound}`,
                  connections: p.concurrency,
                  durationS: quarter,
                  signal: ac.signal,
                  progress,
                })
              : runHttpLoad({
                  port: which === 'bare' ? bare.port : srv!.port,
                  authorization: which === 'bare' ? undefined : `Bearer ${srv!.keys.storefront}`,
                  nextBody: () => TRIVIAL_BODY,
                  classify: classifyTrivial,
                  connections: p.concurrency,
                  durationS: quarter,
                  signal: ac.signal,
                  progress,
                }),
        );
        mergeOutcome(cheap[which], o);
      }
    } finally {
      await settle('stopping the bare graphql-yoga', bare.stop(), 10_000, log);
    }
    const rate = (o: LoadOutcome) => round(o.elapsedS > 0 ? o.requests / o.elapsedS : 0);
    const cheapProblems: string[] = [];
    if (cheap.soldOut.claimed > 0)
      cheapProblems.push(`sold-out placeOrder: ${cheap.soldOut.claimed} claims of a SKU with no stock`);
    for (const [k, o] of Object.entries(cheap))
      if (o.errors) cheapProblems.push(`${k}: ${o.errors} errors, e.g. ${o.errorSamples[0]}`);

    // Live fan-out, on a server of its own (the HTTP server is stopped first: it would only take CPU), its subscribers
    // in a process of their own (bench/fanout.ts).
    log(`bench: ${await drainOutbox(pool!)}`); // the relay of this server publishes the rounds' events before it stops
    await settle('stopping the server', srv.stop(), 15_000, log);
    // a latency measurement: not while a checkpoint or an autovacuum of the earlier rounds' tables is running
    log(`bench: ${await settleDatabase(pool!)}`);
    const fan = await step(
      `live fan-out: ${p.fanout.subscribers} subscribers, a burst of ${p.fanout.sales} sales`,
      () =>
        runFanoutProcess({ databaseUrl: bdb!.url, ...p.fanout, log: (l) => log(`bench:   ${l}`), signal: ac.signal }),
    );
    log(formatFanout(fan));
    if (fan.sold !== p.fanout.sales) cheapProblems.push(`fan-out: sold ${fan.sold} of ${p.fanout.sales}`);

    const ratio = (a: number, b: number) => (b > 0 ? round(a / b, 3) : null);
    const ratios = {
      hotVsCeiling: {
        lastunitClaimsPerS: hotLastunit.claimsPerS,
        ceilingClaimsPerS: hotCeiling.claimsPerS,
        clients: p.concurrency,
        via: ceilingVia,
        ratio: ratio(hotLastunit.claimsPerS, hotCeiling.claimsPerS),
        target: 1,
      },
      soldOutVsTrivial: {
        soldOutPerS: rate(cheap.soldOut),
        trivialPerS: rate(cheap.trivial),
        ratio: ratio(rate(cheap.soldOut), rate(cheap.trivial)),
        target: 0.8,
      },
      trivialVsBareYoga: {
        trivialPerS: rate(cheap.trivial),
        bareYogaPerS: rate(cheap.bare),
        ratio: ratio(rate(cheap.trivial), rate(cheap.bare)),
        target: 0.8,
      },
      fanoutFreshness: {
        p50Ms: fan.freshnessMs.p50,
        p99Ms: fan.freshnessMs.p99,
        targetMs: FRESHNESS_TARGET_MS,
        ratio: ratio(FRESHNESS_TARGET_MS, fan.freshnessMs.p99),
        target: 1,
      },
    };
    const problems = [warmup, ...scenarios, ...chartExtra]
      .flatMap((s) => s.problems.map((x) => `${s.label}: ${x}`))
      .concat(cheapProblems)
      .concat(bucketRows.flatMap((r) => (r.problems ?? []).map((x) => `${r.label}: ${x}`)));
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
      headline: {
        ratio: hotLastunit.ratioToCeiling,
        lastunitClaimsPerS: hotLastunit.claimsPerS,
        ceilingClaimsPerS: hotCeiling.claimsPerS,
      },
      ceiling: { via: ceilingVia, version: version ?? `pg ${process.version}` },
      ratios,
      byClients,
      fanout: fan,
      buckets: bucketRows,
      capacity: capacityModel(bucketRows, os.cpus().length),
      cheap: {
        trivial: {
          requestsPerS: rate(cheap.trivial),
          p50Ms: cheap.trivial.latency.percentiles(50)[0]!,
          p99Ms: cheap.trivial.latency.percentiles(99)[0]!,
        },
        bareYoga: {
          requestsPerS: rate(cheap.bare),
          p50Ms: cheap.bare.latency.percentiles(50)[0]!,
          p99Ms: cheap.bare.latency.percentiles(99)[0]!,
        },
        soldOut: {
          requestsPerS: rate(cheap.soldOut),
          p50Ms: cheap.soldOut.latency.percentiles(50)[0]!,
          p99Ms: cheap.soldOut.latency.percentiles(99)[0]!,
        },
      },
      problems,
      scenarios,
      warmup,
    };
    if ([warmup, ...scenarios].some((s) => s.engine === 'lastunit' && s.errors > 0)) {
      result.serverOutputTail = srv.output().slice(-4000);
      log(`bench: the server printed (last lines):\n${result.serverOutputTail}`);
    }
    const outFile = opts.outFile ?? DEFAULT_OUT_FILE;
    await writeResult(outFile, result);
    const svgFile = opts.svgFile ?? svgBeside(outFile);
    await mkdir(path.dirname(svgFile), { recursive: true });
    const series = (['lastunit', 'ceiling', 'naive'] as const).map((k, i) => ({
      name:
        k === 'lastunit'
          ? 'lastunit placeOrder (HTTP)'
          : k === 'ceiling'
            ? `bare claim (${ceilingVia})`
            : 'naive read-then-write (pg)',
      color: ['#1f77b4', '#2ca02c', '#d62728'][i]!,
      points: byClients.map((r) => ({ clients: r.clients, ...r[k] })),
    }));
    await writeFile(
      svgFile,
      renderChart(
        series,
        `npm run bench, ${result.finishedAt.slice(0, 16)}Z, ${os.cpus().length} CPUs, PostgreSQL ${pgVersion}, load ${loadStart} -> ${result.environment.loadAvg.end}`,
      ),
    );
    log(`bench: wrote ${path.relative(process.cwd(), outFile)} and ${path.relative(process.cwd(), svgFile)}`);
    return result;
  } finally {
    clearTimeout(safety);
    opts.signal?.removeEventListener('abort', onOuterAbort);
    if (!ac.signal.aborted) ac.abort(new Error('bench finished')); // stops any load still running after a fault
    if (srv) await settle('stopping the server', srv.stop(), 15_000, log);
    if (pool) await settle('closing the pg pool', pool.end(), 15_000, log);
    await settle('closing the pg load pool', freeLoadPool(), 15_000, log);
    if (bdb) await settle(`dropping ${bdb.name}`, bdb.drop(), 30_000, log);
  }
}

const svgBeside = (jsonFile: string) => `${jsonFile.replace(/\.json$/, '')}.svg`;

function cliOptions(argv: string[], env: NodeJS.ProcessEnv): BenchOptions {
  const flags = new Map(
    argv
      .filter((a) => a.startsWith('--') && a.includes('='))
      .map((a) => [a.slice(2, a.indexOf('=')), a.slice(a.indexOf('=') + 1)] as const),
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
    svgFile: flags.get('svg') ?? env.BENCH_SVG,
    chartDurationS: num('chart-duration', 'BENCH_CHART_DURATION_S', 0.5),
    chartClients: (flags.get('chart-clients') ?? env.BENCH_CHART_CLIENTS)?.split(',').map((c) => {
      const n = Number(c);
      if (!Number.isInteger(n) || n < 1)
        throw new Error(`BENCH_CHART_CLIENTS / --chart-clients must be client counts like 1,4,16, got "${c}"`);
      return n;
    }),
    fanout: {
      subscribers: int('subscribers', 'BENCH_SUBSCRIBERS', 1) ?? 10_000,
      sales: int('sales', 'BENCH_SALES', 1) ?? 50,
    },
    ceiling: env.BENCH_CEILING === 'pg' ? 'pg' : undefined,
    buckets: bucketList(argv, env),
    bucketDurationS: num('bucket-duration', 'BENCH_BUCKET_DURATION_S', 0.5),
    passes: int('passes', 'BENCH_PASSES', 1),
  };
}

/** `--buckets 1,2,4,8` (or --buckets=..., BENCH_BUCKETS): the stock-bucket rows' bucket counts; "none" for none. */
function bucketList(argv: string[], env: NodeJS.ProcessEnv): number[] | undefined {
  const i = argv.findIndex((a) => a === '--buckets' || a.startsWith('--buckets='));
  const v = i < 0 ? env.BENCH_BUCKETS : argv[i]!.includes('=') ? argv[i]!.slice(10) : argv[i + 1];
  if (v === undefined || v === '') return undefined;
  if (v === 'none') return [];
  return v.split(',').map((c) => {
    const n = Number(c);
    if (!Number.isInteger(n) || n < 1 || n > 64)
      throw new Error(`BENCH_BUCKETS / --buckets must be bucket counts (1-64) like 1,2,4,8, got "${v}"`);
    return n;
  });
}

async function main() {
  const opts = cliOptions(process.argv.slice(2), process.env);
  const ac = new AbortController();
  for (const sig of ['SIGINT', 'SIGTERM'] as const) process.once(sig, () => ac.abort());
  const updateDocs = process.argv.includes('--update-docs');
  const result = await runBench({ ...opts, signal: ac.signal });
  console.log(`\n${formatTable(result)}`);
  const outFile = opts.outFile ?? DEFAULT_OUT_FILE;
  const svgFile = opts.svgFile ?? svgBeside(outFile);
  console.log(`\nJSON: ${path.relative(process.cwd(), outFile)}, chart: ${path.relative(process.cwd(), svgFile)}`);
  if (updateDocs && result.ok) {
    await copyFile(svgFile, DOCS_SVG_FILE);
    console.log(
      `--update-docs: copied the chart to ${path.relative(process.cwd(), DOCS_SVG_FILE)} (the README's); say in the README what this run printed`,
    );
  } else if (updateDocs) console.log('--update-docs: the run failed, so docs/bench.svg is left as it was');
  return result.ok ? 0 : 1;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main().then(
    (code) => process.exit(code),
    (err) => {
      console.error(`bench failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
      process.exit(2);
    },
  );
}
