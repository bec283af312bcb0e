// Capture: collects the money of confirmed payments (the authorization alone lapses after about 7 days at Stripe).
import type { Db } from '../db/pool.js';
import * as store from '../db/payments-store.js';
import type { Processor } from '../payments/processor.js';
import type { Metrics } from '../common/metrics.js';

/**
 * Attempts before a capture is FAILED: with the backoff doubling from the lease (a minute), the tenth attempt comes
 * about 8.5 hours after the first, well inside an authorization's life, and a capture that cannot succeed (the
 * processor refuses it: nothing to capture, voided, unknown) stops instead of being retried forever.
 */
export const MAX_CAPTURE_ATTEMPTS = 10;

/**
 * Leases confirmed payments still to capture (short transaction, SKIP LOCKED), captures each OUTSIDE any transaction,
 * then records it once (guarded on capture_state = PENDING). The processor's capture is idempotent by key, so a lease
 * that ran out mid-call cannot collect twice. A failed capture is tried again after a backoff (`retrySeconds`, default
 * the lease, doubling per attempt up to 6 h), and after
 * `maxAttempts` it is FAILED (Order.payment.captureState, lastunit_payment_captures_total{outcome="failed"}, the
 * order's status event) until an admin's captureOrder tries it again.
 * @example await captureOnce({ db, metrics, processor })
 */
export async function captureOnce(
  deps: { db: Db; metrics: Metrics; processor: Processor },
  opts: {
    batchSize?: number;
    leaseSeconds?: number;
    orderId?: string;
    maxAttempts?: number;
    retrySeconds?: number;
  } = {},
): Promise<number> {
  const { db, processor, metrics } = deps;
  let done = 0;
  for (;;) {
    const batch = await store.claimCaptures(db, opts.batchSize ?? 20, opts.leaseSeconds ?? 60, opts.orderId ?? null);
    if (batch.length === 0) return done;
    let failed = 0;
    for (const c of batch) {
      try {
        await processor.capture(c.key, c.providerRef);
      } catch (err) {
        failed++;
        const why = String((err as Error)?.message ?? err);
        const bound = opts.maxAttempts ?? MAX_CAPTURE_ATTEMPTS;
        const state = await store.noteCaptureFailed(db, c.id, why, bound, opts.retrySeconds ?? opts.leaseSeconds ?? 60);
        metrics.paymentCaptures.inc({ outcome: state === 'FAILED' ? 'failed' : 'retry' });
        continue;
      }
      if (await store.markCaptured(db, c.id)) {
        done++;
        metrics.paymentCaptures.inc({ outcome: 'captured' });
      }
    }
    if (opts.orderId || failed > 0) return done; // a failing processor is not asked again in the same pass
  }
}
