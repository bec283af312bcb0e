// The result shape (also the JSON written to bench/results/latest.json) and the printed table.
import { formatBucketRows } from './buckets.js';
import { formatCapacityModel, type CapacityModel } from './capacity-model.js';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { InventoryRow } from './verify.js';

export type Engine = 'lastunit' | 'ceiling' | 'naive';
export type Mode = 'flash' | 'hot';

export type ScenarioResult = {
  id: string;
  label: string;
  engine: Engine;
  mode: Mode;
  via: 'http' | 'pg' | 'pgbench';
  sku: string;
  /** stock the SKU started with */
  units: number;
  concurrency: number;
  /** closed-loop rounds the figures add up (the hot-SKU pair alternates lastunit, ceiling, ceiling, lastunit) */
  rounds: number;
  /**
   * requests sent (lastunit: idempotency keys minted, one per request; baselines: statements run). A timed round stops
   * listening with requests still in flight, which the server completes: `sold` may exceed `requests`, never `sent`.
   */
  sent: number;
  /** answered requests (claims + refusals + errors) */
  requests: number;
  /** units claimed, from the database (RESERVED orders / claim rows) */
  sold: number;
  refused: number;
  oversold: number;
  /** orders beyond one per idempotency key; null where there are no keys (baselines) */
  duplicates: number | null;
  errors: number;
  errorSamples: string[];
  /** available + reserved + sold == units afterwards */
  conserved: boolean;
  inventory: InventoryRow;
  elapsedS: number;
  claimsPerS: number;
  requestsPerS: number;
  p50Ms: number;
  p99Ms: number;
  /** hot rows: claims/s over the ceiling's hot claims/s; flash rows: requests/s over the ceiling's flash requests/s */
  ratioToCeiling: number | null;
  /** failed checks: any of these fails the run (only lastunit scenarios have them) */
  problems: string[];
  /** reported, not failing: warm-up timeouts, a baseline's errors */
  warnings: string[];
};

export type Point = { claimsPerS: number; p50Ms: number; p99Ms: number };
/** One chart column: the hot SKU at `clients` concurrent clients, per engine. */
export type ClientsRow = { clients: number; lastunit: Point; ceiling: Point; naive: Point };
type Rate = { requestsPerS: number; p50Ms: number; p99Ms: number };

export type BenchResult = {
  version: 1;
  startedAt: string;
  finishedAt: string;
  ok: boolean;
  params: {
    buyers: number;
    units: number;
    concurrency: number;
    durationS: number;
    hotStock: number;
    pgPoolSize: number;
  };
  environment: {
    node: string;
    cpus: number;
    /** 1-minute load average before and after: other work on the machine skews every figure */
    loadAvg: { start: number; end: number };
    database: string;
    postgres: string;
    serverPoolSize: string;
  };
  /** the headline: lastunit's hot-SKU claims/s over the bare single-statement claim's */
  headline: { ratio: number | null; lastunitClaimsPerS: number; ceilingClaimsPerS: number };
  /** what ran the ceiling: pgbench (its version line) or pg in the bench process */
  ceiling: { via: 'pgbench' | 'pg'; version: string };
  /** the four ratios of one run, each with its raw figures and its target */
  ratios: {
    hotVsCeiling: {
      lastunitClaimsPerS: number;
      ceilingClaimsPerS: number;
      clients: number;
      via: 'pgbench' | 'pg';
      ratio: number | null;
      target: number;
    };
    soldOutVsTrivial: { soldOutPerS: number; trivialPerS: number; ratio: number | null; target: number };
    trivialVsBareYoga: { trivialPerS: number; bareYogaPerS: number; ratio: number | null; target: number };
    /** ratio = target / p99 (>= 1: met) */
    fanoutFreshness: { p50Ms: number; p99Ms: number; targetMs: number; ratio: number | null; target: number };
  };
  byClients: ClientsRow[];
  fanout: import('./fanout.js').FanoutResult;
  /** the stock-bucket rows and their costs (bench/buckets.ts) */
  buckets: import('./buckets.js').CostRow[];
  /** the capacity model worked out from the bucket rows (bench/capacity-model.ts), null without them */
  capacity: CapacityModel | null;
  cheap: { trivial: Rate; bareYoga: Rate; soldOut: Rate };
  problems: string[];
  scenarios: ScenarioResult[];
  /** the unreported warm-up run (its invariants count like the others) */
  warmup: ScenarioResult;
  /** what the server printed last, kept when lastunit answered with errors */
  serverOutputTail?: string;
};

const fmt = {
  int: (n: number) => Math.round(n).toLocaleString('en-US'),
  ms: (n: number) => n.toFixed(2),
  ratio: (n: number | null) => (n === null ? '-' : n.toFixed(2)),
};

/** The fan-out's memory and freshness in one line, beside the cost rows. */
function formatFanoutLine(f: BenchResult['fanout']): string {
  const mem = f.memory ? `, server RSS ${(f.memory.perSubscriberBytes / 1024).toFixed(1)} KiB per subscriber` : '';
  return `FAN-OUT  ${f.subscribers} subscribers: freshness p99 ${f.freshnessMs.p99} ms (p50 ${f.freshnessMs.p50})${mem}`;
}

/** The table as printed by `npm run bench`: every row and column named in words, and what the figures mean below it. */
export function formatTable(r: BenchResult): string {
  const head = [
    'what ran',
    'sent',
    'answered',
    'units sold',
    'oversold',
    'dup. orders',
    'errors',
    'sold/s',
    'answers/s',
    'p50 ms',
    'p99 ms',
    'vs bare',
  ];
  const rows = r.scenarios.map((s) => [
    s.label,
    fmt.int(s.sent),
    fmt.int(s.requests),
    fmt.int(s.sold),
    fmt.int(s.oversold),
    s.duplicates === null ? '-' : fmt.int(s.duplicates),
    fmt.int(s.errors),
    s.mode === 'flash' ? '-' : fmt.int(s.claimsPerS),
    fmt.int(s.requestsPerS),
    fmt.ms(s.p50Ms),
    fmt.ms(s.p99Ms),
    fmt.ratio(s.ratioToCeiling),
  ]);
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((row) => row[i]!.length)));
  const line = (cells: string[]) =>
    cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');
  const line2 = (cells: string[]) => cells.map((c, i) => (i === 0 ? c.padEnd(8) : c.padStart(26))).join('');
  const p = r.params;
  const naive = r.scenarios
    .filter((s) => s.engine === 'naive')
    .map((s) => `${s.mode === 'hot' ? 'hot SKU' : 'flash sale'} ${s.conserved ? 'conserved' : 'NOT conserved'}`);
  const out = [
    `lastunit flash-sale bench: ${p.buyers} buyers at ${p.units} units, ${p.concurrency} concurrent clients, ` +
      `hot SKU ${p.durationS} s at ${fmt.int(p.hotStock)} units; pg pool ${p.pgPoolSize}, server pool ${r.environment.serverPoolSize}`,
    `database: ${r.environment.database} (PostgreSQL ${r.environment.postgres}), node ${r.environment.node}, ` +
      `${r.environment.cpus} CPUs, load average ${r.environment.loadAvg.start} -> ${r.environment.loadAvg.end}`,
    '',
    line(head),
    line(widths.map((w) => '-'.repeat(w))),
    ...rows.map(line),
    '',
    `flash sale: ${fmt.int(p.buyers)} buyers, one request each, race for ${fmt.int(p.units)} units, ${p.concurrency} at a time; ` +
      `all but ${fmt.int(p.units)} are told "sold out".`,
    `hot SKU: one product with ${fmt.int(p.hotStock)} units, so it never sells out: ${p.concurrency} clients claim one unit per request for ${p.durationS} s.`,
    'placeOrder over HTTP: lastunit itself, a child process, every request a new order with its own idempotency key and buyer.',
    `bare claim statement: the least any correct claim costs, one conditional UPDATE and one insert in PostgreSQL, no HTTP, no order ` +
      `(${r.ceiling.via === 'pgbench' ? `${r.ceiling.version}, -M prepared` : `pg in the bench process (${r.ceiling.version}), pgbench is not installed`}).`,
    `naive read-then-write: read the stock, then write it (what not to do; its oversold = units it claimed beyond the stock: ${naive.join(', ') || 'n/a'}).`,
    'sent / answered: requests sent and answers received. A hot-SKU round stops its clock with requests still in flight; the server',
    '  completes them after the client stopped listening, so units sold can exceed answered, never sent.',
    'units sold: claims recorded in the database. dup. orders: orders beyond one per idempotency key (must be 0).',
    'sold/s: units sold per second (a flash sale sells only its stock, so its rate is answers/s). vs bare: hot-SKU rows sold/s over',
    "  the bare claim statement's on a hot SKU; flash-sale rows answers/s over the bare statement's flash sale (1.00 = as fast as one SQL statement).",
    '',
    'hot SKU by concurrent clients: units sold/s (p50 / p99 ms)',
    line2(['clients', 'placeOrder (HTTP)', `bare claim (${r.ceiling.via})`, 'naive (pg)']),
    ...r.byClients.map((c) =>
      line2([
        String(c.clients),
        ...[c.lastunit, c.ceiling, c.naive].map(
          (x) => `${fmt.int(x.claimsPerS)} (${fmt.ms(x.p50Ms)} / ${fmt.ms(x.p99Ms)})`,
        ),
      ]),
    ),
    '',
    `RATIOS (one run; target in brackets)`,
    `  1. hot SKU: placeOrder's units sold/s over the ${r.ratios.hotVsCeiling.via} bare claim statement's, ${r.ratios.hotVsCeiling.clients} clients: ` +
      `${fmt.int(r.ratios.hotVsCeiling.lastunitClaimsPerS)} / ${fmt.int(r.ratios.hotVsCeiling.ceilingClaimsPerS)} = ${fmt.ratio(r.ratios.hotVsCeiling.ratio)}  [>= 1.0]`,
    `  2. "sold out" answers of placeOrder over answers to our { __typename }: ${fmt.int(r.ratios.soldOutVsTrivial.soldOutPerS)} / ${fmt.int(r.ratios.soldOutVsTrivial.trivialPerS)} req/s = ` +
      `${fmt.ratio(r.ratios.soldOutVsTrivial.ratio)}  [>= 0.8]`,
    `  3. our { __typename } over a bare graphql-yoga on node:http (the middleware's cost): ${fmt.int(r.ratios.trivialVsBareYoga.trivialPerS)} / ${fmt.int(r.ratios.trivialVsBareYoga.bareYogaPerS)} req/s = ` +
      `${fmt.ratio(r.ratios.trivialVsBareYoga.ratio)}  [>= 0.8]`,
    `  4. fan-out freshness: ${r.fanout.subscribers} subscribers, ${r.fanout.sales} sales, p99 from the last sale's commit to a subscriber showing it: ` +
      `${r.ratios.fanoutFreshness.p99Ms} ms (p50 ${r.ratios.fanoutFreshness.p50Ms}); target ${r.ratios.fanoutFreshness.targetMs} ms / p99 = ${fmt.ratio(r.ratios.fanoutFreshness.ratio)}  [>= 1.0]`,
    `HEADLINE  hot SKU placeOrder units sold/s over the bare claim statement's = ${fmt.int(r.headline.lastunitClaimsPerS)} / ` +
      `${fmt.int(r.headline.ceilingClaimsPerS)} = ${fmt.ratio(r.headline.ratio)}`,
  ];
  if (r.buckets?.length) out.push('', formatBucketRows(r.buckets));
  if (r.capacity) out.push('', formatCapacityModel(r.capacity));
  if (r.buckets?.length) out.push('', formatFanoutLine(r.fanout));
  for (const s of [r.warmup, ...r.scenarios]) {
    for (const prob of s.problems) out.push(`FAIL  ${s.label}: ${prob}`);
    for (const w of s.warnings) out.push(`warn  ${s.label}: ${w}`);
    for (const e of s.errorSamples) out.push(`      e.g. ${e}`);
  }
  out.push(r.ok ? 'OK: lastunit oversold 0, duplicates 0, errors 0' : 'FAILED: see above');
  return out.join('\n');
}

export async function writeResult(file: string, r: BenchResult): Promise<void> {
  await mkdir(path.dirname(file), { recursive: true });
  await writeFile(file, `${JSON.stringify(r, null, 2)}\n`);
}
