import type { Context } from './context.js';
import type { OrderRecord } from '../orders/orders.js';
import { requireRole } from './auth.js';

type LineArg = { sku: string; quantity: number };

export async function order(_: unknown, args: { id: string | number }, ctx: Context): Promise<OrderRecord | null> {
  return ctx.orders.getOrder(ctx.caller, String(args.id));
}

export async function placeOrder(
  _: unknown,
  args: { input: { idempotencyKey: string; customerId: string | number; lines: LineArg[]; payment?: { provider: string; token: string } | null } },
  ctx: Context,
) {
  requireRole(ctx, 'storefront', 'partner');
  const { idempotencyKey, customerId, lines, payment } = args.input;
  const r = await ctx.orders.placeOrder(ctx.caller, { idempotencyKey, customerId: String(customerId), lines, payment });
  return { order: r.order, replayed: r.replayed, userErrors: r.ok ? [] : r.errors };
}

export async function releaseReservation(
  _: unknown,
  args: { input: { orderId: string | number; reason?: string | null } },
  ctx: Context,
) {
  requireRole(ctx, 'storefront', 'partner');
  const r = await ctx.orders.releaseReservation(ctx.caller, { orderId: String(args.input.orderId), reason: args.input.reason });
  return { order: r.order, userErrors: r.ok ? [] : r.errors };
}
