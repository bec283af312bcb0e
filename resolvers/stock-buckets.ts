// Thin: setStockBuckets' arguments -> the catalog -> payload.
import type { Context } from './context.js';
import { requireRole } from './auth.js';
import { userErrorsOf } from './user-errors.js';

export async function setStockBuckets(ctx: Context, input: { sku: string; buckets: number }) {
  requireRole(ctx, 'Mutation.setStockBuckets');
  const r = await ctx.catalog.setStockBuckets(input);
  return { product: r.ok ? r.value : null, userErrors: userErrorsOf(r) };
}
