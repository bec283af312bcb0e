// A scenario = a fresh SKU, one or more bounded closed-loop rounds against it (their figures add up), then the
// database's account of what happened, checked.
import type pg from 'pg';
import { createProduct, runPlaceOrderLoad, type HttpOutcome } from './http-load.js';
import { ceilingClaim, naiveClaim, runPgLoad } from './pg-load.js';
import { runPgbench } from './pgbench.js';
import type { Mode, ScenarioResult } from './report.js';
import type { ServerProcess } from './server.js';
import { mergeOutcome, newOutcome, type LoadOutcome } from './load-outcome.js';
import { round } from '../kit/stats.js';
import {
  baselineFacts,
  conserved,
  lastunitFacts,
  oversoldFromInventory,
  waitForQuiet,
  type InventoryRow,
} from './verify.js';

export type ScenarioContext = {
  runId: string;
  pool: pg.Pool;
  srv: ServerProcess;
  concurrency: number;
  signal: AbortSignal;
  /** the bench database's URL (pgbench connects to it) */
  dbUrl: string;
  /** what runs the ceiling: pgbench when installed, else the claim through `pg` in this process */
  ceilingVia: 'pgbench' | 'pg';
  /** progress lines while a round runs */
  progress?: (line: string) => void;
  /** the pool pg rounds run on (`concurrency` connections, opened on first use) */
  loadPool: () => Promise<pg.Pool>;
  /** closes that pool, before a pgbench round opens its own connections */
  freeLoadPool: () => Promise<void>;
};

/**
 * `tag` (default: the mode) names the SKU and the keys, e.g. 'warmup'. `errorsAreWarnings`: transport errors and
 * timeouts are reported but do not fail the run (the warm-up absorbs the cold start); invariants always do.
 */
export type Spec = { mode: Mode; units: number; tag?: string; label?: string; errorsAreWarnings?: boolean };
/** One round: `amount` requests in all (flash sale), or for `durationS` seconds. */
export type Limit = { amount?: number; durationS?: number };

export type Scenario = {
  round: (limit: Limit) => Promise<void>;
  finish: () => Promise<ScenarioResult>;
};

/** A scenario with a single round. */
export async function runOnce(scenario: Promise<Scenario>, limit: Limit): Promise<ScenarioResult> {
  const s = await scenario;
  await s.round(limit);
  return s.finish();
}

// What each row measures, in words (the table's notes say what a flash sale and a hot SKU are).
const LABELS = {
  lastunit: { flash: 'flash sale: placeOrder over HTTP', hot: 'hot SKU: placeOrder over HTTP' },
  ceiling: { flash: 'flash sale: bare claim statement', hot: 'hot SKU: bare claim statement' },
  naive: { flash: 'flash sale: naive read-then-write', hot: 'hot SKU: naive read-then-write' },
} as const;

/**
 * What every scenario reports alike: the client's counts, the database's figures and the rates over the measured
 * windows (from the answers clients received in them).
 */
function figures(
  ctx: ScenarioContext,
  spec: Spec,
  run: {
    sku: string;
    rounds: number;
    o: LoadOutcome;
    sent: number;
    sold: number;
    oversold: number;
    inventory: InventoryRow;
  },
) {
  const { o } = run;
  const [p50, p99] = o.latency.percentiles(50, 99);
  return {
    mode: spec.mode,
    sku: run.sku,
    units: spec.units,
    concurrency: ctx.concurrency,
    rounds: run.rounds,
    sent: run.sent,
    requests: o.requests,
    sold: run.sold,
    refused: o.refused,
    oversold: run.oversold,
    errors: o.errors,
    errorSamples: o.errorSamples,
    conserved: conserved(run.inventory, spec.units),
    inventory: run.inventory,
    elapsedS: round(o.elapsedS, 3),
    claimsPerS: round(o.elapsedS > 0 ? o.claimed / o.elapsedS : 0),
    requestsPerS: round(o.elapsedS > 0 ? o.requests / o.elapsedS : 0),
    p50Ms: p50!,
    p99Ms: p99!,
    ratioToCeiling: null,
  };
}

/** placeOrder over HTTP; every invariant the bench can see is checked against the database. */
export async function lastunitScenario(ctx: ScenarioContext, spec: Spec): Promise<Scenario> {
  const tag = spec.tag ?? spec.mode;
  const sku = `LU-${tag}-${ctx.runId}`;
  const keyPrefix = `${ctx.runId}-${tag}`;
  await createProduct(ctx.srv, sku, spec.units);
  const o: HttpOutcome = { ...newOutcome(), keysSent: 0 };
  let rounds = 0;
  let requested: number | undefined;

  async function roundFn(limit: Limit) {
    const r = await runPlaceOrderLoad({
      srv: ctx.srv,
      sku,
      keyPrefix: `${keyPrefix}-r${++rounds}`,
      connections: ctx.concurrency,
      ...limit,
      signal: ctx.signal,
      progress: ctx.progress,
    });
    mergeOutcome(o, r).keysSent += r.keysSent;
    if (limit.amount !== undefined) requested = (requested ?? 0) + limit.amount;
    // A timed round stops with up to `connections` requests in flight; let the server finish them before anything else runs.
    await waitForQuiet(ctx.pool, sku);
  }

  async function finish(): Promise<ScenarioResult> {
    const f = await lastunitFacts(ctx.pool, sku, `${keyPrefix}-`);
    const sold = f.reservedOrders;
    const oversold = oversoldFromInventory(f.inventory, spec.units);
    const duplicates = Math.max(0, f.orders - f.keyRows, f.orphanOrders);
    const answered = o.claimed + o.refused;
    // no verdict seen: in flight when a timed round stopped listening (the server completes them), or failed in transport
    const unanswered = o.keysSent - answered;
    const problems: string[] = [];
    const warnings: string[] = [];
    const check = (ok: boolean, what: string) => {
      if (!ok) problems.push(what);
    };
    check(
      oversold === 0,
      `oversold ${oversold}: reserved+sold ${f.inventory.reserved + f.inventory.sold} > ${spec.units} units`,
    );
    check(
      duplicates === 0,
      `duplicates ${duplicates}: ${f.orders} orders for ${f.keyRows} idempotency keys (${f.orphanOrders} without a key)`,
    );
    if (o.errors) (spec.errorsAreWarnings ? warnings : problems).push(`${o.errors} HTTP/GraphQL errors`);
    check(conserved(f.inventory, spec.units), `units not conserved: ${JSON.stringify(f.inventory)} vs ${spec.units}`);
    check(
      sold >= o.claimed && sold <= o.claimed + unanswered,
      `${sold} RESERVED orders, clients told RESERVED ${o.claimed} times (${unanswered} unanswered)`,
    );
    check(
      f.heldUnits === f.inventory.reserved && f.heldReservations === sold,
      `HELD reservations ${f.heldReservations} (${f.heldUnits} units) vs reserved ${f.inventory.reserved}`,
    );
    check(
      f.orders >= answered && f.orders <= o.keysSent,
      `${o.keysSent} keys sent, ${answered} answered, but ${f.orders} orders`,
    );
    check(f.keyRows === f.orders, `${f.keyRows} key rows for ${f.orders} orders`);
    if (spec.mode === 'flash' && o.errors === 0 && requested !== undefined)
      check(
        sold === Math.min(spec.units, requested),
        `sold ${sold} of ${spec.units} units to ${requested} buyers (undersold)`,
      );
    return {
      id: `lastunit-${tag}`,
      label: spec.label ?? (spec.tag ? `${spec.tag}: placeOrder over HTTP` : LABELS.lastunit[spec.mode]),
      engine: 'lastunit',
      via: 'http',
      duplicates,
      ...figures(ctx, spec, { sku, rounds, o, sent: o.keysSent, sold, oversold, inventory: f.inventory }),
      problems,
      warnings,
    };
  }
  return { round: roundFn, finish };
}

/** The ceiling or the naive claim straight through pg, on a SKU created with the same stock. */
export async function baselineScenario(
  ctx: ScenarioContext,
  engine: 'ceiling' | 'naive',
  spec: Spec,
): Promise<Scenario> {
  const sku = `${engine.toUpperCase()}-${spec.mode}-${ctx.runId}`;
  await createProduct(ctx.srv, sku, spec.units);
  const o = newOutcome();
  let rounds = 0;

  const via = engine === 'ceiling' ? ctx.ceilingVia : 'pg';
  async function roundFn(limit: Limit) {
    rounds++;
    if (via === 'pgbench') {
      await ctx.freeLoadPool();
      const { amount: transactions, durationS } = limit;
      mergeOutcome(
        o,
        await runPgbench({
          url: ctx.dbUrl,
          pool: ctx.pool,
          sku,
          clients: ctx.concurrency,
          transactions,
          durationS,
          signal: ctx.signal,
          onProgress: ctx.progress,
        }),
      );
      return;
    }
    const claim = engine === 'ceiling' ? ceilingClaim : naiveClaim;
    mergeOutcome(
      o,
      await runPgLoad({
        pool: await ctx.loadPool(),
        sku,
        claim,
        concurrency: ctx.concurrency,
        ...limit,
        signal: ctx.signal,
      }),
    );
  }

  async function finish(): Promise<ScenarioResult> {
    const f = await baselineFacts(ctx.pool, sku);
    const sold = f.claimRows;
    const oversold = Math.max(0, sold - spec.units);
    const warnings: string[] = []; // a baseline cannot fail the run, but a broken measurement must be visible
    if (o.errors) warnings.push(`${o.errors} database errors`);
    if (sold !== o.claimed) warnings.push(`${sold} claim rows, ${o.claimed} claims reported`);
    if (engine === 'ceiling' && (oversold || !conserved(f.inventory, spec.units)))
      warnings.push(`ceiling broke the stock: ${JSON.stringify(f.inventory)}`);
    return {
      id: `${engine}-${spec.mode}`,
      label: `${LABELS[engine][spec.mode]} (${via})`,
      engine,
      via,
      duplicates: null,
      // a baseline's client counts every statement it runs, none left in flight
      ...figures(ctx, spec, { sku, rounds, o, sent: o.requests, sold, oversold, inventory: f.inventory }),
      problems: [],
      warnings,
    };
  }
  return { round: roundFn, finish };
}
