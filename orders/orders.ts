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
import { isUuid } from './rules.js';

export type { OrderRecord };
export { toOrder } from '../db/orders-store.js';
export type { PlaceOrderInput, PlaceOrderResult } from './place-order.js';
export type { ReleaseInput, ReleaseResult } from './release-order.js';

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
    /** One of the caller's orders; null when unknown or another client's. */
    getOrder: (caller: { clientId: string }, id: string): Promise<OrderRecord | null> =>
      isUuid(id) ? store.findOrder(deps.db, caller.clientId, id) : Promise.resolve(null),
  };
}
export type Orders = ReturnType<typeof createOrders>;
