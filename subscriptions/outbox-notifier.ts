import { notifyOutbox } from '../db/outbox-store.js';
import type { Db } from '../db/pool.js';

/**
 * A debounced `NOTIFY lastunit_outbox`, called by the domain right after a write that produced outbox rows has
 * committed. At most one NOTIFY per `windowMs` per process, however many writes commit: NOTIFY is never part of the
 * writers' own transactions (its commit-time lock would serialize them). A lost NOTIFY costs only latency: the
 * relay's poll picks the rows up.
 * @example const notify = createOutboxNotifier(db); await placeOrder(...); notify();
 */
export function createOutboxNotifier(db: Db, opts: { windowMs?: number; onError?: (err: unknown) => void } = {}) {
  const windowMs = opts.windowMs ?? 2;
  let pending: NodeJS.Timeout | undefined;
  return function notifyOutboxSoon(): void {
    if (pending) return;
    pending = setTimeout(() => {
      pending = undefined;
      notifyOutbox(db).catch(opts.onError ?? (() => {}));
    }, windowMs);
    pending.unref?.();
  };
}
