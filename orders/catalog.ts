// The catalog: products, their availability (read through the cache when there is one) and the admin stock operations.
import * as store from '../db/catalog-store.js';
import type { Availability, Product } from '../db/catalog-store.js';
import type { Db } from '../db/pool.js';
import type { ProductCache } from '../subscriptions/availability-cache.js';
import type { AfterCommit } from '../common/after-commit.js';
import { failed, type Result } from './errors.js';
import { sha256Hex } from '../common/hash.js';

/** What a keyed stock operation answers: its result, and whether it replays an earlier request with the same key. */
export type StockAnswer = CatalogResult<Availability> & { replayed: boolean };
type KeyedBy = { clientId: string };
const MAX_KEY_LENGTH = 255;

export type { Availability, Product };
export type CatalogResult<T> = Result<T>;

const SKU = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;
const MAX_STOCK = 1_000_000_000;

/** Why a purchase limit is refused (null when it is fine): a positive integer or null (no limit). */
const badPurchaseLimit = (limit: number | null | undefined): string | null =>
  limit == null || (Number.isInteger(limit) && limit >= 1 && limit <= MAX_STOCK)
    ? null
    : `a purchase limit must be between 1 and ${MAX_STOCK}, or null for none`;

export type CatalogDeps = {
  db: Db;
  maxSkusPerQuery?: number;
  /** the Redis availability cache, when there is one: reads only (I10) */
  cache?: ProductCache;
  /** told after a committed write that produced outbox rows (wakes the relay) */
  onOutboxWritten?: AfterCommit;
  /** how long a stock operation's idempotency key is remembered (IDEMPOTENCY_RETENTION_HOURS) */
  keyRetentionHours?: number;
};

/** The catalog: products, availability and the admin stock operations. */
export function createCatalog({
  db,
  maxSkusPerQuery = 100,
  cache,
  onOutboxWritten = () => {},
  keyRetentionHours = 24,
}: CatalogDeps) {
  /**
   * A stock write, under the caller's idempotency key when one is given: applied once, the first answer replayed, and
   * a different request under the same key refused with IDEMPOTENCY_KEY_REUSED (nothing written).
   */
  async function keyed(
    operation: 'restock' | 'setStock',
    input: { sku: string; idempotencyKey?: string | null },
    request: unknown,
    caller: KeyedBy | undefined,
    write: (tx?: store.Queryable) => Promise<store.StockResult>,
  ): Promise<{ result: store.StockResult; replayed: boolean } | { reused: true }> {
    const key = input.idempotencyKey;
    if (key == null || !caller) return { result: await write(), replayed: false };
    const requestHash = await sha256Hex(JSON.stringify([operation, request]));
    const r = await store.keyedStockWrite(
      db,
      { clientId: caller.clientId, key, operation, requestHash, retentionHours: keyRetentionHours },
      (tx) => write(tx),
    );
    if (r.kind === 'reused') return { reused: true };
    if (r.kind === 'replayed') return { result: { ok: true, availability: r.availability }, replayed: true };
    return { result: r.result, replayed: false };
  }
  const badKey = (k: string | null | undefined) => k != null && (k.length < 1 || k.length > MAX_KEY_LENGTH);
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

  /** createProduct with components (docs/channels.md, "Bundles"). */
  async function createBundle(input: {
    sku: string;
    name: string;
    priceAmount: number;
    currencyCode: string;
    initialStock?: number | null;
    purchaseLimit?: number | null;
    components: { sku: string; quantity: number }[];
  }): Promise<CatalogResult<Product>> {
    const c = input.components;
    if (c.length < 1 || c.length > 20)
      return failed('INVALID_INPUT', 'a bundle has 1 to 20 components', ['components']);
    for (const [i, x] of c.entries()) {
      if (!SKU.test(x.sku))
        return failed('INVALID_INPUT', 'a component sku must be 1-64 letters, digits, dot, dash or underscore', [
          'components',
          String(i),
          'sku',
        ]);
      if (!Number.isInteger(x.quantity) || x.quantity < 1 || x.quantity > 1000)
        return failed('INVALID_INPUT', 'a component quantity must be between 1 and 1000', [
          'components',
          String(i),
          'quantity',
        ]);
      if (x.sku === input.sku)
        return failed('INVALID_INPUT', 'a bundle cannot contain itself', ['components', String(i), 'sku']);
      if (c.findIndex((y) => y.sku === x.sku) !== i)
        return failed('INVALID_INPUT', `${x.sku} is listed twice`, ['components', String(i), 'sku']);
    }
    if (input.initialStock)
      return failed('INVALID_INPUT', 'a bundle has no stock of its own: its availability comes from its components', [
        'initialStock',
      ]);
    if (input.purchaseLimit != null)
      return failed('INVALID_INPUT', 'set purchase limits on the components: a bundle claims their units', [
        'purchaseLimit',
      ]);
    const r = await store.createBundle(db, {
      sku: input.sku,
      name: input.name,
      priceAmount: input.priceAmount,
      currency: input.currencyCode,
      components: c,
    });
    if (r.ok) return { ok: true, value: r.product };
    if (r.code === 'DUPLICATE_SKU')
      return failed('INVALID_INPUT', `a product with SKU ${input.sku} already exists`, ['sku'], input.sku);
    const i = String(c.findIndex((x) => x.sku === r.sku));
    return r.code === 'UNKNOWN_COMPONENT'
      ? failed('UNKNOWN_SKU', `no product with SKU ${r.sku}`, ['components', i, 'sku'], r.sku)
      : failed('INVALID_INPUT', `${r.sku} is a bundle: bundles do not nest`, ['components', i, 'sku'], r.sku);
  }
  /** A bundle has no stock of its own: restock and setStock go to its components. */
  const refuseBundle = async (sku: string) =>
    (await store.findComponents(db, [sku])).has(sku)
      ? failed<Availability>('INVALID_INPUT', `${sku} is a bundle: change its components' stock`, ['sku'], sku)
      : null;

  return {
    maxSkusPerQuery,
    components: (skus: string[]) => store.findComponents(db, skus),
    findProducts,
    listSkus: (limit = maxSkusPerQuery) => store.listSkus(db, Math.min(limit, maxSkusPerQuery)),

    async createProduct(input: {
      sku: string;
      name: string;
      priceAmount: number;
      currencyCode: string;
      initialStock?: number | null;
      purchaseLimit?: number | null;
      /** a bundle: these products, each `quantity` times, claimed together; no stock of its own */
      components?: { sku: string; quantity: number }[] | null;
    }): Promise<CatalogResult<Product>> {
      if (!SKU.test(input.sku))
        return failed('INVALID_INPUT', 'sku must be 1-64 letters, digits, dot, dash or underscore', ['sku']);
      const name = input.name.trim();
      if (name.length < 1 || name.length > 200)
        return failed('INVALID_INPUT', 'name must be 1 to 200 characters', ['name']);
      if (!Number.isInteger(input.priceAmount) || input.priceAmount < 0)
        return failed('INVALID_INPUT', 'priceAmount is in minor units and must be >= 0', ['priceAmount']);
      if (!/^[A-Z]{3}$/.test(input.currencyCode))
        return failed('INVALID_INPUT', 'currencyCode must be ISO 4217, e.g. USD', ['currencyCode']);
      const initialStock = input.initialStock ?? 0;
      if (!Number.isInteger(initialStock) || initialStock < 0 || initialStock > MAX_STOCK)
        return failed('INVALID_INPUT', `initialStock must be between 0 and ${MAX_STOCK}`, ['initialStock']);
      const limitProblem = badPurchaseLimit(input.purchaseLimit);
      if (limitProblem) return failed('INVALID_INPUT', limitProblem, ['purchaseLimit']);
      if (input.components != null) return createBundle({ ...input, name, components: input.components });
      const r = await store.createProduct(db, {
        sku: input.sku,
        name,
        priceAmount: input.priceAmount,
        currency: input.currencyCode,
        initialStock,
        purchaseLimit: input.purchaseLimit ?? null,
      });
      return r.ok
        ? { ok: true, value: r.product }
        : failed('INVALID_INPUT', `a product with SKU ${input.sku} already exists`, ['sku'], input.sku);
    },

    async restock(
      input: { sku: string; quantity: number; idempotencyKey?: string | null },
      caller?: KeyedBy,
    ): Promise<StockAnswer> {
      if (!Number.isInteger(input.quantity) || input.quantity < 1 || input.quantity > MAX_STOCK)
        return {
          ...failed('INVALID_INPUT', `quantity must be between 1 and ${MAX_STOCK}`, ['quantity'], input.sku),
          replayed: false,
        };
      if (badKey(input.idempotencyKey))
        return {
          ...failed('INVALID_INPUT', `idempotencyKey must be 1 to ${MAX_KEY_LENGTH} characters`, ['idempotencyKey']),
          replayed: false,
        };
      const bundle = await refuseBundle(input.sku);
      if (bundle) return { ...bundle, replayed: false };
      const k = await keyed('restock', input, { sku: input.sku, quantity: input.quantity }, caller, (tx) =>
        store.restock(db, input.sku, input.quantity, tx),
      );
      if ('reused' in k)
        return {
          ...failed('IDEMPOTENCY_KEY_REUSED', 'this idempotencyKey was used for a different stock operation', [
            'idempotencyKey',
          ]),
          replayed: false,
        };
      const r = k.result;
      if (r.ok && !k.replayed) await onOutboxWritten([input.sku]);
      return r.ok
        ? { ok: true, value: r.availability, replayed: k.replayed }
        : { ...failed('UNKNOWN_SKU', `no product with SKU ${input.sku}`, ['sku'], input.sku), replayed: false };
    },

    /** A SKU's units split across `buckets` stock rows so its claims stop queueing on one row (docs/capacity.md). */
    async setStockBuckets(input: { sku: string; buckets: number }): Promise<CatalogResult<Product>> {
      const answer = await store.setStockBuckets(db, input.sku, input.buckets);
      if ('code' in answer) {
        if (answer.code === 'UNKNOWN_SKU') return failed('UNKNOWN_SKU', answer.message, ['sku'], input.sku);
        const path = answer.code === 'INVALID_BUCKETS' ? ['buckets'] : ['sku'];
        return failed('INVALID_INPUT', answer.message, path, input.sku);
      }
      await onOutboxWritten([input.sku]);
      const [product] = await store.findProducts(db, [input.sku]);
      if (!product) return failed('UNKNOWN_SKU', `no product with SKU ${input.sku}`, ['sku'], input.sku);
      if (cache) await cache.put([product]);
      return { ok: true, value: product };
    },

    /** I12: the most units one customer may hold or buy of a SKU; null removes the limit. */
    async setPurchaseLimit(input: { sku: string; limit?: number | null }): Promise<CatalogResult<Product>> {
      const limitProblem = badPurchaseLimit(input.limit);
      if (limitProblem) return failed('INVALID_INPUT', limitProblem, ['limit'], input.sku);
      const product = await store.setPurchaseLimit(db, input.sku, input.limit ?? null);
      if (!product) return failed('UNKNOWN_SKU', `no product with SKU ${input.sku}`, ['sku'], input.sku);
      if (cache) await cache.put([product]); // the cached product page shows the new limit at once (other instances too)
      return { ok: true, value: product };
    },

    async setStock(
      input: { sku: string; available: number; expectedAvailable?: number | null; idempotencyKey?: string | null },
      caller?: KeyedBy,
    ): Promise<StockAnswer> {
      if (!Number.isInteger(input.available) || input.available < 0 || input.available > MAX_STOCK)
        return {
          ...failed('INVALID_INPUT', `available must be between 0 and ${MAX_STOCK}`, ['available'], input.sku),
          replayed: false,
        };
      if (badKey(input.idempotencyKey))
        return {
          ...failed('INVALID_INPUT', `idempotencyKey must be 1 to ${MAX_KEY_LENGTH} characters`, ['idempotencyKey']),
          replayed: false,
        };
      const bundle = await refuseBundle(input.sku);
      if (bundle) return { ...bundle, replayed: false };
      const expected = input.expectedAvailable ?? null;
      const k = await keyed('setStock', input, { sku: input.sku, available: input.available, expected }, caller, (tx) =>
        store.setStock(db, input.sku, input.available, expected, tx),
      );
      if ('reused' in k)
        return {
          ...failed('IDEMPOTENCY_KEY_REUSED', 'this idempotencyKey was used for a different stock operation', [
            'idempotencyKey',
          ]),
          replayed: false,
        };
      const r = k.result;
      if (r.ok && !k.replayed) await onOutboxWritten([input.sku]);
      if (r.ok) return { ok: true, value: r.availability, replayed: k.replayed };
      if (r.code === 'STALE')
        return {
          ...failed(
            'STALE',
            `available is ${r.available}, not ${input.expectedAvailable}; read it again and retry`,
            ['expectedAvailable'],
            input.sku,
          ),
          replayed: false,
        };
      return { ...failed('UNKNOWN_SKU', `no product with SKU ${input.sku}`, ['sku'], input.sku), replayed: false };
    },
  };
}
export type Catalog = ReturnType<typeof createCatalog>;
