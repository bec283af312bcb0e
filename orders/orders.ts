// The order domain as one object per host: placing, releasing and reading orders.
import type { Db } from '../db/pool.js';
import * as store from '../db/orders-store.js';
import type { OrderRecord } from '../db/orders-store.js';
import type { AfterCommit } from '../common/after-commit.js';
import type { Metrics } from '../common/metrics.js';
import type { OrderSettings } from '../common/config-fields.js';
import type { Processor } from '../payments/processor.js';
import type { PaymentSettings } from './payment-step.js';
import { createPlaceOrder } from './place-order.js';
import { createReleaseReservation } from './release-order.js';
import { createPayOrder } from './pay-order.js';
import { createConfirmOrder } from './confirm-order.js';
import { latestPayment, type PaymentView } from '../db/payments-store.js';
import { isUuid } from './rules.js';

export type { OrderRecord };
export { toOrder } from '../db/orders-store.js';
export type { PlaceOrderInput, PlaceOrderResult } from './place-order.js';
export type { ReleaseInput, ReleaseResult } from './release-order.js';
export type { PayOrderInput, PayOrderResult } from './pay-order.js';
export type { ConfirmOrderInput, ConfirmOrderResult } from './confirm-order.js';
export type { PaymentView };

export type OrdersDeps = {
  db: Db;
  metrics: Metrics;
  settings: OrderSettings;
  /** absent: placeOrder refuses a `payment` input */
  payments?: { processor: Processor; settings: PaymentSettings };
  /** told after a committed write that produced outbox rows (wakes the relay; never inside the transaction) */
  onOutboxWritten?: AfterCommit;
};

/**
 * The order domain: each use case lives in its own file; this wires them to one host's dependencies.
 * @example const orders = createOrders({ db, metrics, settings }); await orders.placeOrder(caller, input)
 */
export function createOrders(deps: OrdersDeps) {
  const onOutboxWritten = deps.onOutboxWritten ?? (() => {});
  return {
    placeOrder: createPlaceOrder({ ...deps, onOutboxWritten }),
    releaseReservation: createReleaseReservation({ ...deps, onOutboxWritten }),
    payOrder: createPayOrder({ ...deps, onOutboxWritten }),
    confirmOrder: createConfirmOrder({ ...deps, onOutboxWritten }),
    /** The latest payment attempt of one of the caller's orders (Order.payment); null: none. */
    getPayment: (caller: { clientId: string; role?: string }, orderId: string): Promise<PaymentView | null> =>
      latestPayment(deps.db, caller.role === 'admin' ? null : caller.clientId, orderId),
    /** One of the caller's orders; null when unknown or another client's. */
    getOrder: (caller: { clientId: string }, id: string): Promise<OrderRecord | null> =>
      isUuid(id) ? store.findOrder(deps.db, caller.clientId, id) : Promise.resolve(null),
  };
}
export type Orders = ReturnType<typeof createOrders>;
