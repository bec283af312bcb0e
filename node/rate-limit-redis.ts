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

/**
 * The Redis store while Redis is up, and this process's own windows (`memory`) while it is not: before the first
 * connection is ready, during an outage, and for `coolOffMs` after a command failed while Redis was thought up (a
 * Redis that hangs with its connection open: each command waits out its timeout, so without the pause every request
 * would wait that long and log). `onFallback` is told of the failure that starts a pause, once per pause. So the limits
 * still hold, per instance, instead of letting every request through, and an outage is logged once (by connectRedis's
 * down/up lines, or once per pause) instead of once per request. Counts taken in memory do not reach Redis: for one
 * window after Redis is back, a client may get up to its limit once more per instance.
 * @example redisOrMemoryRateLimitStore(redisRateLimitStore(redis.command), memoryRateLimitStore(), redis.isUp)
 */
export function redisOrMemoryRateLimitStore(
  shared: RateLimitStore,
  memory: RateLimitStore,
  isUp: () => boolean,
  onFallback?: (err: unknown) => void,
  opts: { coolOffMs?: number; now?: () => number } = {},
): RateLimitStore {
  const coolOffMs = opts.coolOffMs ?? 5_000;
  const now = opts.now ?? (() => performance.now()); // monotonic: a clock set back does not stretch a pause
  let pausedUntil = Number.NEGATIVE_INFINITY;
  return {
    async hit(key, windowMs, n) {
      if (!isUp() || now() < pausedUntil) return memory.hit(key, windowMs, n);
      try {
        return await shared.hit(key, windowMs, n);
      } catch (err) {
        // requests that were waiting on the same hung Redis fail together: the first starts the pause and is logged
        if (now() >= pausedUntil) onFallback?.(err);
        pausedUntil = Math.max(pausedUntil, now() + coolOffMs);
        return memory.hit(key, windowMs, n);
      }
    },
  };
}
