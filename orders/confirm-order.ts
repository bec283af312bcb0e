// confirmOrder: a payment taken outside lastunit confirms a held order (RESERVED -> CONFIRMED, the reference stored).
import type { Db } from '../db/pool.js';
import type { OrderRecord } from '../db/orders-store.js';
import * as store from '../db/payments-store.js';
import type { AfterCommit } from '../common/after-commit.js';
import { refuse, type DomainError } from './errors.js';
import { isUuid } from './rules.js';

export type ConfirmOrderInput = { orderId: string; paymentReference: string };
export type ConfirmOrderResult =
  | { ok: true; order: OrderRecord; replayed: boolean }
  | { ok: false; errors: DomainError[]; order: OrderRecord | null };

const MAX_REFERENCE_LENGTH = 255;

/**
 * The confirmOrder use case: one guarded transaction (confirm_order). A hold that already ended is re-claimed by the
 * same conditional write placeOrder uses; when its units are gone the answer is RESERVATION_EXPIRED and a refund owed
 * by the caller is recorded. Idempotent on (orderId, paymentReference).
 * @example await confirmOrder(deps, { clientId: 'shop' }, { orderId, paymentReference: 'ext_123' })
 */
export async function confirmOrder(
  { db, onOutboxWritten }: { db: Db; onOutboxWritten: AfterCommit },
  caller: { clientId: string; role?: string },
  input: ConfirmOrderInput,
): Promise<ConfirmOrderResult> {
  const fail = (errors: DomainError[], order: OrderRecord | null = null): ConfirmOrderResult => ({
    ok: false,
    errors,
    order,
  });
  const ref = input.paymentReference;
  if (ref.trim().length === 0 || ref.length > MAX_REFERENCE_LENGTH || ref.includes('\u0000'))
    return fail([
      refuse('INVALID_INPUT', `paymentReference must be 1 to ${MAX_REFERENCE_LENGTH} characters`, ['paymentReference']),
    ]);
  if (!isUuid(input.orderId)) return fail([refuse('NOT_FOUND', 'no such order', ['orderId'])]);
  // an admin confirms any client's order; every other key only its own client's
  const r = await store.confirmOrder(db, caller.role === 'admin' ? null : caller.clientId, input.orderId, ref);
  switch (r.kind) {
    case 'not_found':
      return fail([refuse('NOT_FOUND', 'no such order', ['orderId'])]);
    case 'confirmed':
      await onOutboxWritten(r.order.lines.map((l) => l.sku)); // a re-claim changed availability
      return { ok: true, order: r.order, replayed: false };
    case 'replayed':
      return { ok: true, order: r.order, replayed: true };
    case 'refund_due':
      return fail(
        [
          refuse(
            'RESERVATION_EXPIRED',
            'the hold ended and its units are gone: the order cannot be confirmed; refund this payment',
            ['orderId'],
          ),
        ],
        r.order,
      );
    case 'already_final':
      return fail(
        [
          refuse(
            'ALREADY_FINAL',
            `the order is ${r.order.status}${r.order.status === 'CONFIRMED' ? ' with another payment' : ''}`,
            ['orderId'],
          ),
        ],
        r.order,
      );
    case 'in_flight':
      return fail(
        [
          refuse('PAYMENT_IN_FLIGHT', 'a payment through lastunit is in flight for this order; wait for its outcome', [
            'orderId',
          ]),
        ],
        r.order,
      );
  }
}
