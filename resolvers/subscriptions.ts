// Thin: subscription arguments -> the host's pubsub streams, filtered to what the caller may see.
import { createGraphQLError, filter, pipe } from 'graphql-yoga';
import type { Context } from './context.js';
import { toDropEntry, toOrder, type DropEntryRecord, type OrderRecord } from '../orders/orders.js';
import type { Availability } from '../orders/catalog.js';
import type { AvailabilityEvent, DropEntryEvent, OrderStatusEvent } from '../subscriptions/pubsub.js';
import { requireRole } from './auth.js';
import { needsOrderToken } from '../orders/order-tokens.js';

/** The pubsub of this host; Workers serve no subscriptions (they stay on the Node host, over graphql-ws). */
function liveOf(ctx: Context) {
  if (!ctx.live)
    throw createGraphQLError('subscriptions are served over graphql-ws by the Node host, not here', {
      extensions: { code: 'SUBSCRIPTIONS_UNAVAILABLE', http: { status: 400 } },
    });
  return ctx.live;
}

export function availabilityChanged(ctx: Context, skus: string[]): AsyncIterable<AvailabilityEvent> {
  requireRole(ctx, 'Subscription.availabilityChanged');
  if (skus.length === 0 || skus.length > ctx.catalog.maxSkusPerQuery) {
    throw createGraphQLError(`availabilityChanged takes 1 to ${ctx.catalog.maxSkusPerQuery} SKUs`, {
      extensions: { code: 'BAD_USER_INPUT' },
    });
  }
  return liveOf(ctx).subscribeMany('availability', skus);
}

export const toAvailability = (e: AvailabilityEvent): Availability => ({
  sku: e.sku,
  available: e.available,
  soldOut: e.soldOut,
  version: e.version,
  updatedAt: new Date(e.updatedAt),
});

/**
 * An order's events, only for the API client that owns it: the event names its client, compared with the caller's. A
 * public key (every browser shares its client) must also present the order's token, checked before it listens.
 */
export async function orderStatusChanged(
  ctx: Context,
  orderId: string,
  token?: string | null,
): Promise<AsyncIterable<WithOrder>> {
  requireRole(ctx, 'Subscription.orderStatusChanged');
  if (needsOrderToken(ctx.caller) && !(await ctx.orders.getOrder(ctx.caller, orderId, token)))
    throw createGraphQLError("no such order (a public key needs the order's token)", {
      extensions: { code: 'NOT_FOUND' },
    });
  const clientId = ctx.caller.clientId;
  return pipe(
    liveOf(ctx).subscribe('order_status', orderId),
    filter((e: OrderStatusEvent): e is WithOrder => e.clientId === clientId && e.order != null),
  );
}

type WithOrder = OrderStatusEvent & { order: NonNullable<OrderStatusEvent['order']> };

// One event object is shared by every local subscriber of its topic: map it to an Order once, not once each.
const orders = new WeakMap<OrderStatusEvent, OrderRecord>();
export function orderFromEvent(e: WithOrder): OrderRecord {
  let o = orders.get(e);
  if (!o) orders.set(e, (o = toOrder(e.order)));
  return o;
}

/**
 * A drop entry's events (docs/drops.md), only for the API client that owns it; a public key must present the entry's
 * token (EnterDropPayload.entryToken), checked before it listens.
 */
export async function dropEntryChanged(
  ctx: Context,
  entryId: string,
  token?: string | null,
): Promise<AsyncIterable<DropEntryEvent>> {
  requireRole(ctx, 'Subscription.dropEntryChanged');
  if (!(await ctx.orders.getDropEntry(ctx.caller, entryId, token)))
    throw createGraphQLError("no such entry (a public key needs the entry's token)", {
      extensions: { code: 'NOT_FOUND' },
    });
  const clientId = ctx.caller.clientId;
  return pipe(
    liveOf(ctx).subscribe('drop_entry', entryId),
    filter((e: DropEntryEvent) => e.clientId === clientId && e.entry != null),
  );
}

const entries = new WeakMap<DropEntryEvent, DropEntryRecord>();
export function entryFromEvent(e: DropEntryEvent): DropEntryRecord {
  let x = entries.get(e);
  if (!x) entries.set(e, (x = toDropEntry(e.entry)));
  return x;
}
