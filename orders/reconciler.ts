import type { Db } from '../db/pool.js';
import * as store from '../db/payments-store.js';
import type { Processor } from '../payments/processor.js';
import type { Metrics } from '../common/metrics.js';
import { compensateOnce } from './compensations.js';
import { every } from '../common/every.js';
import { isTransition, unitsWentBack } from './payment-events.js';

export type ReconcilerOptions = {
  batchSize?: number;
  /** how long a claimed payment is left alone by other reconcilers while its lookup runs */
  leaseSeconds?: number;
  /** first wait after a "pending" answer; doubles per check up to maxBackoffSeconds */
  backoffSeconds?: number;
  maxBackoffSeconds?: number;
};
export type ReconcileResult = { confirmed: number; declined: number; expired: number; pending: number; lost: number; errors: number };

/**
 * Decides AWAITING_PAYMENT orders past their payment deadline by asking the processor (I7: only this releases them):
 *   1. a SHORT transaction leases a batch (FOR UPDATE SKIP LOCKED, next_check_at moved forward) and commits;
 *   2. `lookup` runs outside any transaction;
 *   3. a new transaction applies the guarded transition: succeeded -> CONFIRMED; failed -> REJECTED (PAYMENT_DECLINED);
 *      not_found -> EXPIRED, units back; pending -> asked again later with exponential backoff.
 * Safe beside the sweeper, webhooks and other reconcilers: the guarded transition decides, not the lease.
 * @example await reconcileOnce({ db, metrics, processor })
 */
type ReconcilerDeps = { db: Db; metrics: Metrics; processor: Processor; onOutboxWritten?: (skus?: string[]) => void | Promise<void> };

export async function reconcileOnce(deps: ReconcilerDeps, opts: ReconcilerOptions = {}): Promise<ReconcileResult> {
  const { db, metrics, processor } = deps;
  const out: ReconcileResult = { confirmed: 0, declined: 0, expired: 0, pending: 0, lost: 0, errors: 0 };
  const count = (result: keyof ReconcileResult) => {
    out[result]++;
    metrics.paymentReconciliations.inc({ result });
  };
  for (;;) {
    const due = await store.claimDuePayments(db, opts.batchSize ?? 50, opts.leaseSeconds ?? 30);
    if (due.length === 0) return out;
    await Promise.all(
      due.map(async (p) => {
        try {
          const status = await processor.lookup(p.orderId);
          if (status === 'pending') {
            const backoff = Math.min(opts.maxBackoffSeconds ?? 300, (opts.backoffSeconds ?? 5) * 2 ** Math.max(0, p.checks - 1));
            await store.scheduleNextCheck(db, p.orderId, backoff);
            return count('pending');
          }
          const outcome = status === 'succeeded' ? 'approved' : status === 'failed' ? 'declined' : 'not_found';
          const r = await store.applyPaymentOutcome(db, p.orderId, outcome, null, status === 'failed' ? 'declined at the processor (reconciled)' : null);
          if (r.kind === 'compensate') metrics.paymentCompensations.inc({ event: 'recorded' });
          if (isTransition(r.kind)) await deps.onOutboxWritten?.(unitsWentBack(r)); // the transition wrote outbox rows
          count(r.kind === 'confirmed' ? 'confirmed' : r.kind === 'rejected' ? 'declined' : r.kind === 'expired' ? 'expired' : 'lost');
        } catch {
          count('errors'); // the lease runs out and the next pass asks again
        }
      }),
    );
  }
}

/** The reconciler and the compensation worker as background loops of the Node host. Returns a stop function. */
export function startReconciler(
  deps: ReconcilerDeps,
  opts: ReconcilerOptions & { intervalMs: number; onError?: (err: unknown) => void },
) {
  const onError = opts.onError ?? (() => {});
  return every(opts.intervalMs, async () => {
    await reconcileOnce(deps, opts);
    await compensateOnce(deps);
  }, onError);
}
