import * as store from '../db/catalog-store.js';
import type { Availability, Product } from '../db/catalog-store.js';
import type { Db } from '../db/pool.js';
import type { DomainError } from './orders.js';
import type { ProductCache } from '../subscriptions/availability-cache.js';

export type { Availability, Product };
export type CatalogResult<T> = { ok: true; value: T } | { ok: false; errors: DomainError[] };

const SKU = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;
const MAX_STOCK = 1_000_000_000;
const fail = <T>(code: string, field: string[], message: string, sku?: string): CatalogResult<T> => ({
  ok: false,
  errors: [{ code, field: ['input', ...field], message, ...(sku ? { sku } : {}) }],
});

export type CatalogDeps = {
  db: Db;
  maxSkusPerQuery?: number;
  /** the Redis availability cache, when there is one: reads only (I10) */
  cache?: ProductCache;
  /** told after a committed write that produced outbox rows (wakes the relay) */
  onOutboxWritten?: (skus?: string[]) => void | Promise<void>;
};

/** The catalog: products, availability and the admin stock operations. */
export function createCatalog({ db, maxSkusPerQuery = 100, cache, onOutboxWritten = () => {} }: CatalogDeps) {
  /** Read-through: cached products first, PostgreSQL for the rest (or for all of them while the cache is down). */
  async function findProducts(skus: string[]): Promise<(Product | null)[]> {
    if (!cache || skus.length === 0) return store.findProducts(db, skus);
    const cached = await cache.get(skus);
    if (!cached) return store.findProducts(db, skus);
    const missing = [...new Set(skus.filter((s) => !cached.has(s)))];
    if (missing.length) {
      const fresh = (await store.findProducts(db, missing)).filter((p): p is Product => p !== null);
      for (const p of fresh) cached.set(p.sku, p);
      void cache.put(fresh);
    }
    return skus.map((s) => cached.get(s) ?? null);
  }

  return {
    maxSkusPerQuery,
    findProducts,
    listSkus: (limit = maxSkusPerQuery) => store.listSkus(db, Math.min(limit, maxSkusPerQuery)),

    async createProduct(input: {
      sku: string;
      name: string;
      priceAmount: number;
      currencyCode: string;
      initialStock?: number | null;
    }): Promise<CatalogResult<Product>> {
      if (!SKU.test(input.sku)) return fail('INVALID_INPUT', ['sku'], 'sku must be 1-64 letters, digits, dot, dash or underscore');
      const name = input.name.trim();
      if (name.length < 1 || name.length > 200) return fail('INVALID_INPUT', ['name'], 'name must be 1 to 200 characters');
      if (!Number.isInteger(input.priceAmount) || input.priceAmount < 0)
        return fail('INVALID_INPUT', ['priceAmount'], 'priceAmount is in minor units and must be >= 0');
      if (!/^[A-Z]{3}$/.test(input.currencyCode)) return fail('INVALID_INPUT', ['currencyCode'], 'currencyCode must be ISO 4217, e.g. USD');
      const initialStock = input.initialStock ?? 0;
      if (!Number.isInteger(initialStock) || initialStock < 0 || initialStock > MAX_STOCK)
        return fail('INVALID_INPUT', ['initialStock'], `initialStock must be between 0 and ${MAX_STOCK}`);
      const r = await store.createProduct(db, { sku: input.sku, name, priceAmount: input.priceAmount, currency: input.currencyCode, initialStock });
      return r.ok ? { ok: true, value: r.product } : fail('INVALID_INPUT', ['sku'], `a product with SKU ${input.sku} already exists`, input.sku);
    },

    async restock(input: { sku: string; quantity: number }): Promise<CatalogResult<Availability>> {
      if (!Number.isInteger(input.quantity) || input.quantity < 1 || input.quantity > MAX_STOCK)
        return fail('INVALID_INPUT', ['quantity'], `quantity must be between 1 and ${MAX_STOCK}`, input.sku);
      const r = await store.restock(db, input.sku, input.quantity);
      if (r.ok) await onOutboxWritten([input.sku]);
      return r.ok ? { ok: true, value: r.availability } : fail('UNKNOWN_SKU', ['sku'], `no product with SKU ${input.sku}`, input.sku);
    },

    async setStock(input: { sku: string; available: number; expectedAvailable?: number | null }): Promise<CatalogResult<Availability>> {
      if (!Number.isInteger(input.available) || input.available < 0 || input.available > MAX_STOCK)
        return fail('INVALID_INPUT', ['available'], `available must be between 0 and ${MAX_STOCK}`, input.sku);
      const r = await store.setStock(db, input.sku, input.available, input.expectedAvailable ?? null);
      if (r.ok) await onOutboxWritten([input.sku]);
      if (r.ok) return { ok: true, value: r.availability };
      if (r.code === 'STALE')
        return fail('STALE', ['expectedAvailable'], `available is ${r.available}, not ${input.expectedAvailable}; read it again and retry`, input.sku);
      return fail('UNKNOWN_SKU', ['sku'], `no product with SKU ${input.sku}`, input.sku);
    },
  };
}
export type Catalog = ReturnType<typeof createCatalog>;
