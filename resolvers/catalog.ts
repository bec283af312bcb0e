import { createGraphQLError } from 'graphql-yoga';
import type { Context } from './context.js';
import type { Availability, CatalogResult, Product } from '../orders/catalog.js';
import { requireRole } from './auth.js';

export async function product(_: unknown, args: { sku: string }, ctx: Context): Promise<Product | null> {
  const [p] = await ctx.catalog.findProducts([args.sku]);
  return p ?? null;
}

export async function products(_: unknown, args: { skus: string[] }, ctx: Context): Promise<(Product | null)[]> {
  if (args.skus.length > ctx.catalog.maxSkusPerQuery) {
    throw createGraphQLError(`products takes at most ${ctx.catalog.maxSkusPerQuery} SKUs`, {
      extensions: { code: 'BAD_USER_INPUT', http: { status: 400 } },
    });
  }
  return ctx.catalog.findProducts(args.skus);
}

const payload = <T, K extends string>(key: K, r: CatalogResult<T>) =>
  ({ [key]: r.ok ? r.value : null, userErrors: r.ok ? [] : r.errors }) as { [P in K]: T | null } & { userErrors: unknown[] };

export async function createProduct(
  _: unknown,
  args: { input: { sku: string; name: string; priceAmount: number; currencyCode: string; initialStock?: number | null } },
  ctx: Context,
) {
  requireRole(ctx, 'admin');
  return payload('product', await ctx.catalog.createProduct(args.input));
}

export async function restock(_: unknown, args: { input: { sku: string; quantity: number } }, ctx: Context) {
  requireRole(ctx, 'admin');
  return payload<Availability, 'availability'>('availability', await ctx.catalog.restock(args.input));
}

export async function setStock(
  _: unknown,
  args: { input: { sku: string; available: number; expectedAvailable?: number | null } },
  ctx: Context,
) {
  requireRole(ctx, 'admin');
  return payload<Availability, 'availability'>('availability', await ctx.catalog.setStock(args.input));
}
