// Thin: GraphQL arguments -> one call into the catalog -> payload.
import { createGraphQLError } from 'graphql-yoga';
import type { Context } from './context.js';
import type { Availability, Product } from '../orders/catalog.js';
import type { Result } from '../orders/errors.js';
import { requireRole } from './auth.js';
import { userErrorsOf } from './user-errors.js';

/** A SKU with a NUL character cannot exist (PostgreSQL cannot even compare one): no product, and no query. */
const impossibleSku = (sku: string) => sku.includes('\u0000');

export async function product(ctx: Context, sku: string): Promise<Product | null> {
  if (impossibleSku(sku)) return null;
  const [p] = await ctx.catalog.findProducts([sku]);
  return p ?? null;
}

/** A product's bundle components (one indexed read per product asked); null for a plain product. */
export async function components(ctx: Context, sku: string) {
  return (await ctx.catalog.components([sku])).get(sku) ?? null;
}

export async function products(ctx: Context, skus: string[]): Promise<(Product | null)[]> {
  if (skus.length > ctx.catalog.maxSkusPerQuery) {
    throw createGraphQLError(`products takes at most ${ctx.catalog.maxSkusPerQuery} SKUs`, {
      extensions: { code: 'BAD_USER_INPUT', http: { status: 400 } },
    });
  }
  const possible = skus.filter((s) => !impossibleSku(s));
  if (possible.length === skus.length) return ctx.catalog.findProducts(skus);
  const found = new Map((await ctx.catalog.findProducts(possible)).map((p, i) => [possible[i]!, p]));
  return skus.map((s) => found.get(s) ?? null);
}

const productPayload = (r: Result<Product>) => ({ product: r.ok ? r.value : null, userErrors: userErrorsOf(r) });
const stockPayload = (r: Result<Availability>) => ({
  availability: r.ok ? r.value : null,
  userErrors: userErrorsOf(r),
});

type CatalogInput<K extends 'createProduct' | 'restock' | 'setStock'> = Parameters<Context['catalog'][K]>[0];

export async function createProduct(ctx: Context, input: CatalogInput<'createProduct'>) {
  requireRole(ctx, 'Mutation.createProduct');
  return productPayload(await ctx.catalog.createProduct(input));
}

export async function restock(ctx: Context, input: CatalogInput<'restock'>) {
  requireRole(ctx, 'Mutation.restock');
  const r = await ctx.catalog.restock(input, ctx.caller);
  return { ...stockPayload(r), replayed: r.replayed };
}

export async function setStock(ctx: Context, input: CatalogInput<'setStock'>) {
  requireRole(ctx, 'Mutation.setStock');
  const r = await ctx.catalog.setStock(input, ctx.caller);
  return { ...stockPayload(r), replayed: r.replayed };
}
