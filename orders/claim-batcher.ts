// placeOrder's claims, alone or coalesced per SKU: a claim goes out at once when nothing is in flight for its SKU;
// claims arriving meanwhile wait and go together in the next batch (one transaction, one commit). No timers, so an
// idle SKU pays no latency, and a hot SKU's throughput is not one commit flush per order. The batcher is given what a
// batch does as data (ClaimWork) and runs it itself (placeClaims): one place_order, or one place_orders per batch.
import type { Db } from '../db/pool.js';
import * as store from '../db/orders-store.js';
import { retryReason } from '../db/retry.js';
import { UnexpectedRowError } from '../db/rows.js';
import type { Metrics } from '../common/metrics.js';

/** One order's claim: its place_order arguments without what a whole batch shares. */
export type Claim = store.BatchedOrderArgs;

/** What every claim of one host shares: the database, the hold and key settings, and where timings go. */
export type ClaimWork = {
  db: Db;
  metrics: Metrics;
  holdTtlSeconds: number;
  retentionHours: number;
  /** active holds per buyer (I14); 0: no limit */
  maxActiveHolds: number;
};

export type ClaimBatcherOptions = {
  /** false (CLAIM_BATCHING=off): every claim alone, so races are decided by PostgreSQL alone */
  batching: boolean;
  /** batches of one SKU in flight at once (CLAIM_BATCHES_IN_FLIGHT) */
  maxInFlight: number;
  /** a bucketed SKU's lanes, each with its own batches in flight (CLAIM_LANES_PER_SKU; at most one per bucket) */
  lanesPerSku: number;
};

/** SQLSTATEs of a database that is stuck or overloaded, not of a bad request: 55P03 lock_timeout, 57014 statement_timeout. */
const ENVIRONMENT_FAILURES = new Set(['55P03', '57014']);

/**
 * Whether a failed batch is worth repeating one claim at a time to find the faulty one. Lock and statement timeouts,
 * lost connections and answers of an unknown shape concern every claim alike: then the whole batch fails at once.
 */
const isOneClaimsFault = (err: unknown) =>
  !ENVIRONMENT_FAILURES.has(String((err as { code?: unknown })?.code)) &&
  !retryReason(err) &&
  !(err instanceof UnexpectedRowError);

/**
 * LU003: a batch of a bucketed SKU found every bucket that could cover a sale held by another transaction, and was
 * handed back whole rather than wait (db/functions/120_stock-buckets.sql). Such holds are short (another lane's batch,
 * the sweeper evening the buckets out), so the batch goes once more as it is before its orders go one at a time.
 */
const isBucketsHeld = (err: unknown) => (err as { code?: unknown })?.code === 'LU003';

/**
 * A host's claims: `claimOrder(batcher, claim)` sends each one alone or with others of its SKU.
 * @example const batcher = createClaimBatcher({ db, metrics, holdTtlSeconds: 600, retentionHours: 24, maxActiveHolds: 5 }, { batching: true, maxInFlight: 1 })
 */
export function createClaimBatcher(work: ClaimWork, options: ClaimBatcherOptions) {
  const lanes = createBatchLanes<Claim, store.PlaceOrderRow>((claims) => placeClaims(work, claims), {
    maxInFlight: options.maxInFlight,
    onBatch: (n) => work.metrics.claimBatchSize.observe(n),
    isolate: isOneClaimsFault,
    again: isBucketsHeld,
  });
  return { work, batching: options.batching, submit: lanes, laneOf: bucketLanes(work.db, options.lanesPerSku) };
}

/**
 * The lane a SKU's claim queues on: the SKU, or for a SKU with stock buckets (docs/capacity.md) one of as many lanes as
 * it has buckets, up to `maxLanes`, in turn, so that several of its batches are in flight at once (each takes a bucket
 * of its own). More lanes than the database can run at once only make each batch smaller, and a small batch costs more
 * per claim (measured on 2 cores: 8 buckets in 8 lanes 1,126 claims/s, in 2 lanes 1,621-2,058). The bucket count is
 * read at most once a second per SKU; a change takes effect within that second, and any lane count is safe
 * (PostgreSQL decides every claim).
 */
export function bucketLanes(db: Db, maxLanes: number, ttlMs = 1000) {
  const known = new Map<string, { count: Promise<number>; until: number; next: number }>();
  return async function laneOf(sku: string): Promise<string> {
    let k = known.get(sku);
    if (!k || k.until < Date.now()) {
      if (known.size > 10_000) known.clear();
      const count = store.stockBucketsOf(db, sku).catch(() => 1);
      known.set(sku, (k = { count, until: Date.now() + ttlMs, next: k?.next ?? 0 }));
    }
    const n = Math.min(await k.count, maxLanes);
    return n > 1 ? `${sku}#${k.next++ % n}` : sku;
  };
}
export type ClaimBatcher = ReturnType<typeof createClaimBatcher>;

/**
 * Claims one order: with the others of its SKU when it can share a transaction (one line, no payment, batching on),
 * else alone. An order with a payment keeps its key PROCESSING through the payment step, so it never shares a batch.
 */
export async function claimOrder(batcher: ClaimBatcher, claim: Claim): Promise<store.PlaceOrderRow> {
  if (batcher.batching && claim.lines.length === 1 && !claim.payment)
    return batcher.submit(
      await batcher.laneOf(claim.lines[0]!.sku),
      JSON.stringify([claim.clientId, claim.customerId, claim.key]),
      claim,
    );
  const [row] = await placeClaims(batcher.work, [claim]);
  return row!;
}

/** One batch in one transaction: place_order for a batch of one, place_orders for more; timed, retries included. */
export async function placeClaims(work: ClaimWork, claims: Claim[]): Promise<store.PlaceOrderRow[]> {
  const stop = work.metrics.claimSeconds.startTimer();
  try {
    if (claims.length === 1) {
      const shared = {
        holdTtlSeconds: work.holdTtlSeconds,
        retentionHours: work.retentionHours,
        maxActiveHolds: work.maxActiveHolds,
      };
      return [await store.placeOrder(work.db, { ...claims[0]!, ...shared })];
    }
    return await store.placeOrders(work.db, claims, work.holdTtlSeconds, work.retentionHours, work.maxActiveHolds);
  } finally {
    stop();
  }
}

export type BatchRunner<Req, Res> = (requests: Req[]) => Promise<Res[]>;
type Item<Req, Res> = { req: Req; dedupe: string; resolve: (r: Res) => void; reject: (e: unknown) => void };
type Lane<Req, Res> = { waiting: Item<Req, Res>[]; inFlight: number };

/**
 * The queue under the claim batcher, one lane per key (the SKU): `submit(lane, dedupe, req)` answers `req` from the
 * batch it went out in. Two requests with the same `dedupe` (idempotency scope) never share a batch.
 * @example const submit = createBatchLanes(run); await submit('SKU-1', 'client/customer/key', req)
 */
export function createBatchLanes<Req, Res>(
  run: BatchRunner<Req, Res>,
  opts: {
    maxBatch?: number;
    /**
     * Batches of one lane that may be in flight at once (default 1). More than one lets PostgreSQL prepare the next
     * batch (key rows, orders: no inventory lock) while the previous one holds the SKU's row, and lets this process
     * answer one batch while the database works on the next.
     */
    maxInFlight?: number;
    onBatch?: (size: number) => void;
    /**
     * Whether a failed batch should be repeated one request at a time to find the faulty one (a data error). For a
     * failure of the environment (lock or statement timeout, lost database) repeating alone would only wait again,
     * once per request, while the lane is blocked: then every request of the batch fails at once. Default: always.
     */
    isolate?: (err: unknown) => boolean;
    /** Whether a failed batch is worth sending once more as it is, before isolating (default: never). */
    again?: (err: unknown) => boolean;
  } = {},
) {
  const maxBatch = opts.maxBatch ?? 64;
  const maxInFlight = Math.max(1, opts.maxInFlight ?? 1);
  const lanes = new Map<string, Lane<Req, Res>>();

  async function runAlone(item: Item<Req, Res>) {
    try {
      const [res] = await run([item.req]);
      item.resolve(res!);
    } catch (err) {
      item.reject(err);
    }
  }

  async function flush(laneKey: string, lane: Lane<Req, Res>) {
    // Two requests with the same idempotency key never share a batch: the second must see the first one's outcome.
    const batch: Item<Req, Res>[] = [];
    const seen = new Set<string>();
    const rest: Item<Req, Res>[] = [];
    for (const item of lane.waiting) {
      if (batch.length < maxBatch && !seen.has(item.dedupe)) {
        batch.push(item);
        seen.add(item.dedupe);
      } else rest.push(item);
    }
    lane.waiting = rest;
    lane.inFlight++;
    try {
      opts.onBatch?.(batch.length);
      const reqs = batch.map((b) => b.req);
      const results = await run(reqs).catch((err: unknown) => {
        if (opts.again?.(err)) return run(reqs);
        throw err;
      });
      for (const [i, b] of batch.entries()) b.resolve(results[i]!);
    } catch (err) {
      // One request's fault must not fail its neighbours: repeat each alone, so only the faulty one sees the error.
      if (batch.length === 1 || !(opts.isolate?.(err) ?? true)) for (const b of batch) b.reject(err);
      else for (const b of batch) await runAlone(b);
    } finally {
      lane.inFlight--;
      if (lane.waiting.length) void flush(laneKey, lane);
      else if (lane.inFlight === 0) lanes.delete(laneKey);
    }
  }

  /** Queues `req` on `laneKey` (the SKU); `dedupe` is its idempotency scope (client, customer, key). */
  return function submit(laneKey: string, dedupe: string, req: Req): Promise<Res> {
    return new Promise<Res>((resolve, reject) => {
      let lane = lanes.get(laneKey);
      if (!lane) lanes.set(laneKey, (lane = { waiting: [], inFlight: 0 }));
      lane.waiting.push({ req, dedupe, resolve, reject });
      if (lane.inFlight < maxInFlight) void flush(laneKey, lane);
    });
  };
}
