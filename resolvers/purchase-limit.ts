// Thin: setPurchaseLimit's arguments -> the catalog -> payload.
import type { Context } from './context.js';
import { requireRole } from './auth.js';
import { userErrorsOf } from './user-errors.js';

export async function setPurchaseLimit(ctx: Context, input: { sku: string; limit?: number | null }) {
  requireRole(ctx, 'Mutation.setPurchaseLimit');
  const r = await ctx.catalog.setPurchaseLimit(input);
  return { product: r.ok ? r.value : null, userErrors: userErrorsOf(r) };
}
