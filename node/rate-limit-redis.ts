// Node host only (ioredis needs TCP): never import this from anything edge/worker.ts reaches.
import type { Redis } from 'ioredis';
import type { RateLimitStore } from '../app/rate-limit.js';

// INCRBY and set the expiry on the window's first hits, atomically: every instance counts in the same window.
const HIT = `local n = redis.call('INCRBY', KEYS[1], ARGV[2])
if n == tonumber(ARGV[2]) then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
return {n, redis.call('PTTL', KEYS[1])}`;

/**
 * A rate-limit store shared by every instance through Redis (fixed windows, one key per client and window), its keys
 * under `prefix` (REDIS_KEY_PREFIX): deployments that share a Redis with prefixes of their own count apart.
 * @example rateLimit({ limit, windowSeconds, store: redisRateLimitStore(new Redis(config.redisUrl), Date.now, config.redisKeyPrefix) })
 */
export function redisRateLimitStore(redis: Redis, now: () => number = Date.now, prefix = 'lastunit:'): RateLimitStore {
  return {
    async hit(key, windowMs, n = 1) {
      const window = Math.floor(now() / windowMs);
      const [count, pttl] = (await redis.eval(HIT, 1, `${prefix}${key}:${window}`, String(windowMs), String(n))) as [
        number,
        number,
      ];
      return { count, resetMs: pttl > 0 ? pttl : windowMs };
    },
  };
}
