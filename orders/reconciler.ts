// The reconciler: decides AWAITING_PAYMENT orders past their deadline by asking the processor (I7).
import type { Db } from '../db/pool.js';
import * as store from '../db/payments-store.js';
import { UnexpectedRowError } from '../db/rows.js';
import type { LookupStatus, NextAction, Processor } from '../payments/processor.js';
import type { Metrics } from '../common/metrics.js';
import { compensateOnce } from './compensations.js';
import { captureOnce } from './capture.js';
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
export type ReconcileResult = {
  confirmed: number;
  declined: number;
  expired: number;
  pending: number;
  lost: number;
  errors: number;
  cancelled: number;
};

/**
 * Decides AWAITING_PAYMENT orders past their payment deadline by asking the processor (I7: only this releases them):
 *   1. a SHORT transaction leases a batch (FOR UPDATE SKIP LOCKED, next_check_at moved forward) and commits;
 *   2. the processor is asked outside any transaction, by identity: an attempt whose payment id we never learned (its
 *      authorization timed out) is authorized AGAIN with the same key and method (the processor answers the same payment,
 *      never a second one), so "not found" is never final while that repeat is possible; otherwise `lookup(key, id)`;
 *   3. a new transaction applies the guarded transition: succeeded -> CONFIRMED; failed -> REJECTED (PAYMENT_DECLINED,
 *      or back to HELD for payOrder); not_found -> EXPIRED, units back; pending -> asked again with exponential backoff.
 *   Past PAYMENT_MAX_PENDING_SECONDS (PAYMENT_ACTION_TIMEOUT_SECONDS while the shopper is asked to act) an undecided
 *   attempt is cancelled AT THE PROCESSOR first; only a confirmed cancel releases the hold, and a success that won the
 *   race confirms the order instead.
 * Safe beside the sweeper, webhooks and other reconcilers: the guarded transition decides, not the lease.
 * @example await reconcileOnce({ db, metrics, processor })
 */
type ReconcilerDeps = {
  db: Db;
  metrics: Metrics;
  processor: Processor;
  onOutboxWritten?: (skus?: string[]) => void | Promise<void>;
};
export type { ReconcilerDeps };

export async function reconcileOnce(deps: ReconcilerDeps, opts: ReconcilerOptions = {}): Promise<ReconcileResult> {
  const { db, metrics, processor } = deps;
  const out: ReconcileResult = { confirmed: 0, declined: 0, expired: 0, pending: 0, lost: 0, errors: 0, cancelled: 0 };
  const count = (result: keyof ReconcileResult) => {
    out[result]++;
    metrics.paymentReconciliations.inc({ result });
  };
  const apply = async (
    p: store.DuePayment,
    outcome: store.PaymentOutcome,
    providerRef: string | null,
    reason: string | null,
    nextAction: NextAction | null = null,
  ) => {
    const r = await store.applyPaymentOutcome(db, p.orderId, outcome, providerRef, reason, p.key, nextAction);
    if (r.kind === 'compensate') metrics.paymentCompensations.inc({ event: 'recorded' });
    if (isTransition(r.kind)) await deps.onOutboxWritten?.(unitsWentBack(r)); // the transition wrote outbox rows
    count(
      r.kind === 'confirmed'
        ? 'confirmed'
        : r.kind === 'rejected' || r.kind === 'declined_held'
          ? 'declined'
          : r.kind === 'expired' || r.kind === 'held'
            ? 'expired'
            : r.kind === 'cancelled'
              ? 'cancelled'
              : r.kind === 'action_required' || r.kind === 'unknown'
                ? 'pending'
                : 'lost',
    );
  };
  for (;;) {
    const due = await store.claimDuePayments(db, opts.batchSize ?? 50, opts.leaseSeconds ?? 30);
    if (due.length === 0) return out;
    await Promise.all(
      due.map(async (p) => {
        try {
          let status: LookupStatus;
          let ref = p.providerRef;
          if (!ref && p.repeat && !p.giveUp) {
            // by identity: the same key and method make the processor answer the payment it made (or make it now)
            const again = await processor.authorize({ orderId: p.orderId, key: p.key, ...p.repeat });
            if (again.providerRef) {
              ref = again.providerRef;
              await store.notePaymentRef(db, p.key, ref);
            }
            status = again.outcome === 'approved' ? 'succeeded' : again.outcome === 'declined' ? 'failed' : 'pending';
            if (again.outcome === 'action_required' && p.state !== 'ACTION_REQUIRED' && !p.giveUp)
              return apply(p, 'action_required', ref, null, again.nextAction ?? null);
          } else {
            status = await processor.lookup(p.key, ref);
            // not found, but a repeat could still make the attempt known: never final while that is possible
            if (status === 'not_found' && p.repeat) status = 'pending';
          }
          if (status === 'pending' && p.giveUp) {
            // bounded AWAITING_PAYMENT: cancel at the processor first; release only on its confirmation
            const c = await processor.cancel(p.key, ref);
            if (c === 'succeeded') return apply(p, 'approved', ref, null); // the success won the race
            return apply(
              p,
              c === 'canceled' ? 'cancelled' : 'declined',
              ref,
              c === 'canceled' ? 'payment not completed in time' : 'declined at the processor (reconciled)',
            );
          }
          if (status === 'pending') {
            const backoff = Math.min(
              opts.maxBackoffSeconds ?? 300,
              (opts.backoffSeconds ?? 5) * 2 ** Math.max(0, p.checks - 1),
            );
            await store.scheduleNextCheck(db, p.orderId, backoff);
            return count('pending');
          }
          const outcome = status === 'succeeded' ? 'approved' : status === 'failed' ? 'declined' : 'not_found';
          await apply(p, outcome, ref, status === 'failed' ? 'declined at the processor (reconciled)' : null);
        } catch (err) {
          count('errors'); // the lease runs out and the next pass asks again
          if (err instanceof UnexpectedRowError) throw err; // the code's fault, not this payment's: the loop logs it
        }
      }),
    );
  }
}

/** The reconciler and the compensation worker as background loops of the Node host. Returns a stop function. */
export function startReconciler(
  /** capture (PAYMENT_CAPTURE): on_confirm captures confirmed payments in the same loop; manual leaves them to captureOrder */
  deps: ReconcilerDeps & { capture: 'on_confirm' | 'manual' },
  opts: ReconcilerOptions & { intervalMs: number; onError?: (err: unknown) => void },
) {
  const onError = opts.onError ?? (() => {});
  return every(
    opts.intervalMs,
    async () => {
      await reconcileOnce(deps, opts);
      await compensateOnce(deps);
      if (deps.capture === 'on_confirm') await captureOnce(deps);
      deps.metrics.reconcilerLastRun.set(Date.now() / 1000);
    },
    onError,
  );
}
