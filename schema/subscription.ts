// The live events: availability per SKU and one order's status, served over graphql-ws by the Node host.
import { builder } from './builder.js';
import { Availability } from './product.js';
import { Order } from './order.js';
import { DropEntry } from './drop.js';
import * as r from '../resolvers/subscriptions.js';

builder.subscriptionFields((t) => ({
  availabilityChanged: t.field({
    type: Availability,
    description:
      'Every change of availability of these SKUs (1 to 100), across all server instances. Held units are not available, ' +
      'so the last unit held for one shopper arrives as soldOut: true. Delivered at least once, in version order per SKU ' +
      'as committed; drop an event whose version is not above the last one you kept.',
    args: { skus: t.arg.stringList({ required: true, description: 'The SKUs to watch.' }) },
    subscribe: (_root, args, ctx) => r.availabilityChanged(ctx, args.skus),
    resolve: r.toAvailability,
  }),
  orderStatusChanged: t.field({
    type: Order,
    description:
      'Every change of one of your orders once placeOrder has answered with its id (paid, confirmed, released, expired...): ' +
      "its first status is in that answer. Another client's order never sends " +
      'anything. The order is as read when the change was relayed; drop an event whose updatedAt is older than one you have.',
    args: {
      orderId: t.arg.id({ required: true, description: 'The order to watch.' }),
      token: t.arg.string({
        required: false,
        description: "The order's token (PlaceOrderPayload.orderToken): required with a public key.",
      }),
    },
    subscribe: (_root, args, ctx) => r.orderStatusChanged(ctx, args.orderId, args.token),
    resolve: r.orderFromEvent,
  }),
  dropEntryChanged: t.field({
    type: DropEntry,
    description:
      'Every change of one of your drop entries (shuffled, admitted, ordered, lapsed, drawn...), as read when relayed: ' +
      'drop an event whose updatedAt is older than one you have.',
    args: {
      entryId: t.arg.id({ required: true, description: 'The entry to watch.' }),
      token: t.arg.string({
        required: false,
        description: "The entry's token (EnterDropPayload.entryToken): required with a public key.",
      }),
    },
    subscribe: (_root, args, ctx) => r.dropEntryChanged(ctx, args.entryId, args.token),
    resolve: r.entryFromEvent,
  }),
}));
