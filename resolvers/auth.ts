// Who may run what: every root field's roles in one table. The operation guard (app/use-operation-guard.ts) refuses a
// whole operation by it before any field runs (I15); each resolver checks it again, so a host without the guard is
// never open. docs/api.md ("Who may call what") prints this table, and test/roles.test.ts keeps the two equal.
import { createGraphQLError } from 'graphql-yoga';
import type { Role } from '../common/caller.js';
import type { Context } from './context.js';

const EVERY_ROLE = ['public', 'storefront', 'partner', 'admin'] as const;
const SERVER_SIDE = ['storefront', 'admin'] as const;
const ADMIN = ['admin'] as const;

/**
 * The roles that may run each root field (`Type.field`). An admin key may do everything a storefront key may (it is as
 * secret and as trusted: a back office places, pays and releases orders for a customer too), plus running the shop.
 */
export const ROOT_FIELD_ROLES = {
  'Query.product': EVERY_ROLE,
  'Query.products': EVERY_ROLE,
  'Query.catalog': EVERY_ROLE,
  'Query.order': EVERY_ROLE, // a public key only with the order's token
  'Query.orders': SERVER_SIDE,
  'Query.channels': ADMIN,
  'Query.channel': ADMIN,
  'Query.stockLevels': ADMIN,
  'Query.openOrders': ADMIN,
  'Query.channelHealth': ADMIN,
  'Query.saleActivity': ADMIN,
  'Query.drop': EVERY_ROLE, // a drop's rule, counts and published draw values are public
  'Query.drops': EVERY_ROLE,
  'Query.dropEntry': EVERY_ROLE, // a public key only with the entry's token
  'Query.waitlistEntry': EVERY_ROLE, // a public key only with the entry's token
  'Mutation.placeOrder': EVERY_ROLE,
  'Mutation.releaseReservation': EVERY_ROLE, // a public key only with the order's token
  'Mutation.payOrder': EVERY_ROLE, // a public key only with the order's token
  'Mutation.confirmOrder': SERVER_SIDE,
  'Mutation.createBuyerToken': SERVER_SIDE,
  'Mutation.captureOrder': ADMIN,
  'Mutation.cancelOrder': ADMIN,
  'Mutation.createProduct': ADMIN,
  'Mutation.restock': ADMIN,
  'Mutation.setStock': ADMIN,
  'Mutation.setPurchaseLimit': ADMIN,
  'Mutation.setStockBuckets': ADMIN,
  'Mutation.createChannel': ADMIN,
  'Mutation.updateChannel': ADMIN,
  'Mutation.publishPartnerDocuments': ADMIN,
  'Mutation.retryChannelPush': ADMIN,
  'Query.events': ['partner', 'admin'], // a partner key: its own client's orders' events
  'Query.webhookEndpoints': ADMIN,
  'Query.webhookEndpoint': ADMIN,
  'Mutation.createWebhookEndpoint': ADMIN,
  'Mutation.updateWebhookEndpoint': ADMIN,
  'Mutation.deleteWebhookEndpoint': ADMIN,
  'Mutation.rotateWebhookEndpointSecret': ADMIN,
  'Mutation.redeliverEvent': ADMIN,
  'Mutation.createDrop': ADMIN,
  'Mutation.enterDrop': EVERY_ROLE, // a public key's entry is its buyer's (buyer token, else the address)
  'Mutation.joinWaitlist': EVERY_ROLE, // as enterDrop
  'Subscription.availabilityChanged': ['public', 'storefront', 'admin'],
  'Subscription.orderStatusChanged': ['public', 'storefront', 'admin'], // a public key only with the order's token
  'Subscription.dropEntryChanged': ['public', 'storefront', 'admin'], // a public key only with the entry's token
} as const satisfies Record<string, readonly Role[]>;

export type RootField = keyof typeof ROOT_FIELD_ROLES;

/** The roles that may run `Type.field`; undefined for a field this table does not name (introspection's `__` fields). */
export function rolesOf(field: string): readonly Role[] | undefined {
  return (ROOT_FIELD_ROLES as Record<string, readonly Role[]>)[field];
}

/** The FORBIDDEN fault (HTTP 403) for a caller whose role may not run `field`. */
export function forbidden(field: string, path?: readonly string[]) {
  const roles = rolesOf(field) ?? [];
  return createGraphQLError(`this operation needs a ${roles.join(' or ')} key`, {
    path,
    extensions: { code: 'FORBIDDEN', http: { status: 403 } },
  });
}

/** Throws FORBIDDEN (HTTP 403) unless the caller's key has one of the roles of `field`. */
export function requireRole(ctx: Context, field: RootField): void {
  if (!(ROOT_FIELD_ROLES[field] as readonly Role[]).includes(ctx.caller.role)) throw forbidden(field);
}
