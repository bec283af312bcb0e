import type { Logger } from 'pino';
import type { Availability, Product } from '../db/catalog-store.js';
import type { Metrics } from '../common/metrics.js';
import type { AvailabilityEvent } from './pubsub.js';
import type { RedisClients } from './redis.js';

/** What the catalog asks of a cache. Only reads use it: placeOrder never does (I10). */
export type ProductCache = {
  /** cached products by SKU (absent ones are misses), or null when the cache is unavailable */
  get(skus: string[]): Promise<Map<string, Product> | null>;
  /** read-through fill after a miss; best effort */
  put(products: Product[]): Promise<void>;
  /** a relay event: newer figures replace older ones, never the other way (version guard) */
  applyAvailability(event: AvailabilityEvent): Promise<void>;
  /**
   * Drops the cached figures of SKUs this instance just changed (after commit), so its own next read goes to
   * PostgreSQL (read-your-writes); other instances converge through the relay's versioned updates. Best effort.
   */
  invalidate(skus: string[]): Promise<void>;
};

// Keeps the newer figures: a read-through fill racing a relay update cannot put an older version back.
const SET_IF_NEWER = `
local v = redis.call('HGET', KEYS[1], 'v')
if v and tonumber(v) >= tonumber(ARGV[1]) then return 0 end
redis.call('HSET', KEYS[1], 'v', ARGV[1], 'j', ARGV[2])
redis.call('EXPIRE', KEYS[1], ARGV[3])
return 1`;

type StaticProduct = Omit<Product, 'availability'>;

/**
 * The Redis availability cache for product pages and sold-out badges: `<prefix>avail:<sku>` (a hash holding the
 * version and the figures, written only if newer) and `<prefix>product:<sku>` (name and price), both with a short TTL.
 * Filled on read (read-through) and updated from relay events. Any Redis failure is a miss-like fallback: the caller
 * reads PostgreSQL, `lastunit_availability_cache_reads_total{result="fallback"}` counts it.
 */
export function createAvailabilityCache(
  redis: RedisClients,
  opts: { ttlSeconds: number; metrics: Metrics; logger: Logger },
): ProductCache {
  const { command: r, prefix } = redis;
  const ttl = opts.ttlSeconds;
  const availKey = (sku: string) => `${prefix}avail:${sku}`;
  const productKey = (sku: string) => `${prefix}product:${sku}`;
  const setIfNewer = (a: { sku: string; version: number }, json: string) =>
    r.eval(SET_IF_NEWER, 1, availKey(a.sku), a.version, json, ttl);
  const fallback = () => opts.metrics.cacheReads.inc({ result: 'fallback' });

  return {
    async get(skus) {
      if (!redis.isUp()) {
        fallback();
        return null;
      }
      try {
        const pipe = r.pipeline();
        for (const sku of skus) pipe.hget(availKey(sku), 'j').get(productKey(sku));
        const res = (await pipe.exec()) ?? [];
        const out = new Map<string, Product>();
        skus.forEach((sku, i) => {
          const [e1, avail] = res[2 * i] ?? [];
          const [e2, product] = res[2 * i + 1] ?? [];
          if (e1 || e2) throw e1 ?? e2;
          if (typeof avail !== 'string' || typeof product !== 'string') return;
          const a = JSON.parse(avail) as Availability & { updatedAt: string };
          out.set(sku, {
            ...(JSON.parse(product) as StaticProduct),
            availability: { ...a, updatedAt: new Date(a.updatedAt) },
          });
        });
        opts.metrics.cacheReads.inc({ result: 'hit' }, out.size);
        opts.metrics.cacheReads.inc({ result: 'miss' }, skus.length - out.size);
        return out;
      } catch (err) {
        fallback();
        opts.logger.debug({ err }, 'availability cache read failed; reading PostgreSQL');
        return null;
      }
    },

    async put(products) {
      if (!redis.isUp() || products.length === 0) return;
      try {
        const pipe = r.pipeline();
        for (const p of products) {
          const { availability, ...rest } = p;
          pipe.set(productKey(p.sku), JSON.stringify(rest), 'EX', ttl * 6);
          pipe.eval(SET_IF_NEWER, 1, availKey(p.sku), availability.version, JSON.stringify(availability), ttl);
        }
        await pipe.exec();
      } catch {
        // best effort: the next read misses and reads PostgreSQL again
      }
    },

    async invalidate(skus) {
      if (!redis.isUp() || skus.length === 0) return;
      await r.del(...skus.map(availKey)).catch(() => {});
    },

    async applyAvailability(e) {
      if (!redis.isUp()) return;
      const a = {
        sku: e.sku,
        available: e.available,
        soldOut: e.soldOut,
        version: Number(e.version),
        updatedAt: e.updatedAt,
      };
      await setIfNewer(a, JSON.stringify(a)).catch(() => {});
    },
  };
}
