// Capture: collects the money of confirmed payments (the authorization alone lapses after about 7 days at Stripe).
import type { Db } from '../db/pool.js';
import * as store from '../db/payments-store.js';
import type { Processor } from '../payments/processor.js';
import type { Metrics } from '../common/metrics.js';

/**
 * Leases confirmed payments still to capture (short transaction, SKIP LOCKED), captures each OUTSIDE any transaction,
 * then records it once (guarded on capture_state = PENDING). The processor's capture is idempotent by key, so a lease
 * that ran out mid-call cannot collect twice; a failed capture stays PENDING and is retried after its lease.
 * @example await captureOnce({ db, metrics, processor })
 */
export async function captureOnce(
  deps: { db: Db; metrics: Metrics; processor: Processor },
  opts: { batchSize?: number; leaseSeconds?: number; orderId?: string } = {},
): Promise<number> {
  const { db, processor } = deps;
  let done = 0;
  for (;;) {
    const batch = await store.claimCaptures(db, opts.batchSize ?? 20, opts.leaseSeconds ?? 60, opts.orderId ?? null);
    if (batch.length === 0) return done;
    let failed = 0;
    for (const c of batch) {
      try {
        await processor.capture(c.key, c.providerRef);
        if (await store.markCaptured(db, c.id)) done++;
      } catch {
        failed++; // not captured: the lease lapses and a later pass tries again (or captureOrder does)
      }
    }
    if (opts.orderId || failed > 0) return done; // a failing processor is not asked again in the same pass
  }
}
