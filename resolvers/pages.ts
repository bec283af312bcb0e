// Thin: connection arguments -> one page from the domain; bad arguments are a 400 BAD_USER_INPUT, like `products`.
import { createGraphQLError } from 'graphql-yoga';
import type { Context } from './context.js';
import type { Result } from '../orders/errors.js';
import { requireRole } from './auth.js';

function resultValue<T>(r: Result<T>): T {
  if (r.ok) return r.value;
  throw createGraphQLError(r.errors.map((e) => e.message).join('; '), {
    extensions: { code: 'BAD_USER_INPUT', http: { status: 400 } },
  });
}

export async function catalog(ctx: Context, args: { first?: number | null; after?: string | null }) {
  return resultValue(await ctx.orders.catalogPage(args));
}

/** A storefront sees its own client's orders; an admin sees every client's. */
export async function orders(
  ctx: Context,
  args: { customerId?: string | null; status?: string | null; first?: number | null; after?: string | null },
) {
  requireRole(ctx, 'Query.orders');
  return resultValue(await ctx.orders.ordersPage(ctx.caller.role === 'admin' ? null : ctx.caller.clientId, args));
}
