// releaseReservation: give held units back, once (a guarded transition in PostgreSQL decides).
import type { Db } from '../db/pool.js';
import * as store from '../db/orders-store.js';
import type { OrderRecord } from '../db/orders-store.js';
import type { AfterCommit } from '../common/after-commit.js';
import type { Metrics } from '../common/metrics.js';
import type { Caller } from '../common/caller.js';
import { refuse, type DomainError } from './errors.js';
import { isUuid } from './rules.js';
import { mayActOn } from './get-order.js';

/** `token`: the order's token, which a public key must present (without it: NOT_FOUND, nothing changes). */
export type ReleaseInput = { orderId: string; reason?: string | null; token?: string | null };
export type ReleaseResult =
  | { ok: true; order: OrderRecord }
  | { ok: false; errors: DomainError[]; order: OrderRecord | null };
export type ReleaseDeps = { db: Db; metrics: Metrics; onOutboxWritten: AfterCommit };

const MAX_REASON_LENGTH = 500;

/**
 * The releaseReservation use case: RESERVED -> CANCELLED with the units back (I6); a second release is a no-op that
 * answers the same order; a confirmed order is ALREADY_FINAL; an unknown payment outcome keeps the hold (I7).
 * @example await releaseReservation(deps, { clientId: 'shop' }, { orderId })
 */
export async function releaseReservation(
  deps: ReleaseDeps,
  caller: Pick<Caller, 'clientId'> & Partial<Caller>,
  input: ReleaseInput,
): Promise<ReleaseResult> {
  const notFound: ReleaseResult = {
    ok: false,
    order: null,
    errors: [refuse('NOT_FOUND', 'no such order', ['orderId'])],
  };
  if (!(await mayActOn(deps, caller, input.orderId, input.token))) return notFound;
  if (!isUuid(input.orderId)) return notFound;
  if (input.reason && input.reason.length > MAX_REASON_LENGTH)
    return {
      ok: false,
      order: null,
      errors: [refuse('INVALID_INPUT', `reason must be at most ${MAX_REASON_LENGTH} characters`, ['reason'])],
    };
  // an admin releases any client's hold (the console's Release); every other key only its own client's
  const clientId = caller.role === 'admin' ? null : caller.clientId;
  const r = await store.releaseOrder(deps.db, clientId, input.orderId, input.reason ?? null);
  if (r.kind === 'released') await deps.onOutboxWritten(r.order.lines.map((l) => l.sku));
  switch (r.kind) {
    case 'not_found':
      return notFound;
    case 'released':
      deps.metrics.reservationsReleased.inc();
      return { ok: true, order: r.order };
    case 'noop':
      return { ok: true, order: r.order };
    case 'already_final':
      return {
        ok: false,
        order: r.order,
        errors: [refuse('ALREADY_FINAL', 'the order is confirmed; its units are sold', ['orderId'])],
      };
    case 'payment_in_flight':
      return {
        ok: false,
        order: r.order,
        errors: [
          refuse(
            'PAYMENT_IN_FLIGHT',
            'a payment for this order may have succeeded; the hold stays until the processor answers',
            ['orderId'],
          ),
        ],
      };
  }
}
