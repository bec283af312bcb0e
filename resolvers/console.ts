// Thin: the shop console's admin fields (docs/console.md) -> one call into orders/shop-console.ts -> payload.
import type { Context } from './context.js';
import { requireRole } from './auth.js';
import { userErrorsOf } from './user-errors.js';

export async function stockLevels(ctx: Context, args: { first?: number | null; skus?: string[] | null }) {
  requireRole(ctx, 'Query.stockLevels');
  return ctx.shopConsole.stockLevels(args.first, args.skus);
}

export async function openOrders(ctx: Context, args: { first?: number | null }) {
  requireRole(ctx, 'Query.openOrders');
  return ctx.shopConsole.openOrders(args.first);
}

export async function channelHealth(ctx: Context, args: { first?: number | null }) {
  requireRole(ctx, 'Query.channelHealth');
  return ctx.shopConsole.channelHealth(args.first);
}

export function saleActivity(ctx: Context, args: { seconds?: number | null }) {
  requireRole(ctx, 'Query.saleActivity');
  return ctx.shopConsole.saleActivity(args.seconds);
}

export async function retryChannelPush(ctx: Context, input: { channelId: string; sku: string }) {
  requireRole(ctx, 'Mutation.retryChannelPush');
  const r = await ctx.shopConsole.retryChannelPush(input);
  return { listing: r.ok ? r.value : null, userErrors: userErrorsOf(r) };
}
