/**
 * Natural batching of claims for one SKU: a request goes out at once when nothing is in flight for its SKU; requests
 * arriving meanwhile wait and go together in the next batch (one transaction, one commit). No timers, so an idle
 * SKU pays no latency, and a hot SKU's throughput is no longer one commit flush per order.
 */
export type BatchRunner<Req, Res> = (requests: Req[]) => Promise<Res[]>;

type Item<Req, Res> = { req: Req; dedupe: string; resolve: (r: Res) => void; reject: (e: unknown) => void };
type Lane<Req, Res> = { waiting: Item<Req, Res>[]; inFlight: number };

export function createClaimBatcher<Req, Res>(opts: {
  run: BatchRunner<Req, Res>;
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
}) {
  const maxBatch = opts.maxBatch ?? 64;
  const maxInFlight = Math.max(1, opts.maxInFlight ?? 1);
  const lanes = new Map<string, Lane<Req, Res>>();

  async function runAlone(item: Item<Req, Res>) {
    try {
      const [res] = await opts.run([item.req]);
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
      const results = await opts.run(batch.map((b) => b.req));
      batch.forEach((b, i) => b.resolve(results[i]!));
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
