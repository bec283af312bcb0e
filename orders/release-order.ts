// releaseReservation: give held units back, once (a guarded transition in PostgreSQL decides).
import type { Db } from '../db/pool.js';
import * as store from '../db/orders-store.js';
import type { OrderRecord } from '../db/orders-store.js';
import type { AfterCommit } from '../common/after-commit.js';
import type { Metrics } from '../common/metrics.js';
import { refuse, type DomainError } from './errors.js';
import { isUuid } from './rules.js';

export type ReleaseInput = { orderId: string; reason?: string | null };
export type ReleaseResult = { ok: true; order: OrderRecord } | { ok: false; errors: DomainError[]; order: OrderRecord | null };

const MAX_REASON_LENGTH = 500;

/**
 * The releaseReservation use case: RESERVED -> CANCELLED with the units back (I6); a second release is a no-op that
 * answers the same order; a confirmed order is ALREADY_FINAL; an unknown payment outcome keeps the hold (I7).
 * @example const release = createReleaseReservation(deps); await release({ clientId }, { orderId })
 */
export function createReleaseReservation({ db, metrics, onOutboxWritten }: { db: Db; metrics: Metrics; onOutboxWritten: AfterCommit }) {
  return async function releaseReservation(caller: { clientId: string }, input: ReleaseInput): Promise<ReleaseResult> {
    const notFound: ReleaseResult = { ok: false, order: null, errors: [refuse('NOT_FOUND', 'no such order', ['orderId'])] };
    if (!isUuid(input.orderId)) return notFound;
    if (input.reason && input.reason.length > MAX_REASON_LENGTH)
      return { ok: false, order: null, errors: [refuse('INVALID_INPUT', `reason must be at most ${MAX_REASON_LENGTH} characters`, ['reason'])] };
    const r = await store.releaseOrder(db, caller.clientId, input.orderId, input.reason ?? null);
    if (r.kind === 'released') await onOutboxWritten(r.order.lines.map((l) => l.sku));
    switch (r.kind) {
      case 'not_found':
        return notFound;
      case 'released':
        metrics.reservationsReleased.inc();
        return { ok: true, order: r.order };
      case 'noop':
        return { ok: true, order: r.order };
      case 'already_final':
        return { ok: false, order: r.order, errors: [refuse('ALREADY_FINAL', 'the order is confirmed; its units are sold', ['orderId'])] };
      case 'payment_in_flight':
        return {
          ok: false,
          order: r.order,
          errors: [refuse('PAYMENT_IN_FLIGHT', 'a payment for this order may have succeeded; the hold stays until the processor answers', ['orderId'])],
        };
    }
  };
}
