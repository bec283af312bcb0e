import type { MiddlewareHandler } from 'hono';
import type { AuthVariables } from './api-keys.js';

/** Counts hits of one key in fixed windows. */
export type RateLimitStore = {
  /** adds one hit to `key` in the window of `windowMs`; returns the count so far and ms until the window ends */
  hit(key: string, windowMs: number): Promise<{ count: number; resetMs: number }>;
};

/** A store in this process's memory: right for one instance (the embedded default); use Redis for several. */
export function memoryRateLimitStore(now: () => number = Date.now): RateLimitStore {
  const windows = new Map<string, { start: number; count: number }>();
  return {
    async hit(key, windowMs) {
      const t = now();
      const start = t - (t % windowMs);
      let w = windows.get(key);
      if (!w || w.start !== start) {
        if (windows.size > 10_000) for (const [k, v] of windows) if (v.start !== start) windows.delete(k);
        w = { start, count: 0 };
        windows.set(key, w);
      }
      w.count++;
      return { count: w.count, resetMs: start + windowMs - t };
    },
  };
}

/**
 * A per-API-key fixed-window rate limit: over `limit` requests in `windowSeconds` is answered 429 with code
 * RATE_LIMITED and `Retry-After` (seconds). Runs after authentication, so the key is known and counted by client id.
 * @example app.use('/graphql', rateLimit({ limit: 600, windowSeconds: 60, store: memoryRateLimitStore() }))
 */
export function rateLimit(opts: {
  limit: number;
  windowSeconds: number;
  store: RateLimitStore;
  /** told when the store fails; the request is then let through (a Redis outage must not take the API down) */
  onStoreError?: (err: unknown) => void;
}): MiddlewareHandler<{ Variables: AuthVariables }> {
  const windowMs = opts.windowSeconds * 1000;
  return async function rateLimit(c, next) {
    const caller = c.get('caller');
    if (!caller) return next();
    let hit: { count: number; resetMs: number };
    try {
      hit = await opts.store.hit(`rl:${caller.clientId}`, windowMs);
    } catch (err) {
      opts.onStoreError?.(err);
      return next();
    }
    const { count, resetMs } = hit;
    const remaining = Math.max(0, opts.limit - count);
    c.header('RateLimit-Limit', String(opts.limit));
    c.header('RateLimit-Remaining', String(remaining));
    if (count > opts.limit) {
      const retryAfter = Math.max(1, Math.ceil(resetMs / 1000));
      return c.json(
        { errors: [{ message: `rate limit of ${opts.limit} requests per ${opts.windowSeconds}s exceeded for this API key`, extensions: { code: 'RATE_LIMITED', retryAfterSeconds: retryAfter } }] },
        429,
        { 'Retry-After': String(retryAfter) },
      );
    }
    return next();
  };
}
