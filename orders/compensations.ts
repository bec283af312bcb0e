import type { Db } from '../db/pool.js';
import * as store from '../db/payments-store.js';
import type { Processor } from '../payments/processor.js';
import type { Metrics } from '../common/metrics.js';

/**
 * Carries out pending compensations: lease a batch (short transaction, SKIP LOCKED), `void` each OUTSIDE any transaction,
 * then mark it done (guarded on PENDING, so it is marked once). The processor's void is idempotent by order id, so even
 * a lease that ran out mid-call cannot give the money back twice.
 * @example await compensateOnce({ db, metrics, processor })
 */
export async function compensateOnce(
  deps: { db: Db; metrics: Metrics; processor: Processor },
  opts: { batchSize?: number; leaseSeconds?: number } = {},
): Promise<number> {
  const { db, metrics, processor } = deps;
  let done = 0;
  for (;;) {
    const batch = await store.claimCompensations(db, opts.batchSize ?? 20, opts.leaseSeconds ?? 60);
    if (batch.length === 0) return done;
    for (const c of batch) {
      try {
        await processor.void(c.key, c.providerRef);
        if (await store.markCompensated(db, c.id)) {
          done++;
          metrics.paymentCompensations.inc({ event: 'voided' });
        }
      } catch (err) {
        metrics.paymentCompensations.inc({ event: 'failed' });
        await store.noteCompensationError(db, c.id, String((err as Error)?.message ?? err));
      }
    }
  }
}
