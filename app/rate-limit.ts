// Rate limits that stop a runaway client without throttling a sale: per API key (sized per role, headers on every
// answer), and per buyer on placeOrder (app/buyer-rate-limit.ts). Fixed windows in a store (memory or Redis).
import type { MiddlewareHandler } from 'hono';
import type { AuthVariables } from './api-keys.js';
import type { Caller, Role } from '../common/caller.js';

/** Counts hits of one key in fixed windows. */
export type RateLimitStore = {
  /** adds `n` hits (default 1) to `key` in the window of `windowMs`; returns the count so far and ms until the window ends */
  hit(key: string, windowMs: number, n?: number): Promise<{ count: number; resetMs: number }>;
};

/**
 * A store in this process's memory: right for one instance (the embedded default); use Redis for several. Windows are
 * fixed and shared by every key of one length, so each length keeps one table of plain counts for its current window
 * and drops it whole when the window turns: no object per key, and nothing to sweep (a flash sale counts a new buyer
 * on nearly every request).
 */
export function memoryRateLimitStore(now: () => number = Date.now): RateLimitStore {
  const windows = new Map<number, { start: number; counts: Map<string, number> }>();
  return {
    async hit(key, windowMs, n = 1) {
      const t = now();
      const start = t - (t % windowMs);
      let w = windows.get(windowMs);
      if (!w || w.start !== start) windows.set(windowMs, (w = { start, counts: new Map() }));
      const count = (w.counts.get(key) ?? 0) + n;
      w.counts.set(key, count);
      return { count, resetMs: start + windowMs - t };
    },
  };
}

/** One counted request: whether it may go on, and what the RateLimit-* headers say. */
export type RateVerdict = {
  allowed: boolean;
  limit: number;
  remaining: number;
  resetSeconds: number;
  windowSeconds: number;
};

/** Per-role limits per window; a role missing here, or 0, is not limited. */
export type RoleLimits = Partial<Record<Role, number>>;

/**
 * Counts `n` requests (default 1) of `scope` against `limit` per window. Resolves null when nothing is counted: the
 * limit is 0 (off), or the store failed (then `onStoreError` is told and the request goes on: an outage of the limiter
 * must not take the API down).
 * @example const v = await countRequest({ store, windowSeconds: 60 }, `rl:${caller.clientId}`, 600)
 */
export async function countRequest(
  opts: { store: RateLimitStore; windowSeconds: number; onStoreError?: (err: unknown) => void },
  scope: string,
  limit: number,
  n = 1,
): Promise<RateVerdict | null> {
  if (!(limit > 0)) return null;
  let hit: { count: number; resetMs: number };
  try {
    hit = await opts.store.hit(scope, opts.windowSeconds * 1000, n);
  } catch (err) {
    opts.onStoreError?.(err);
    return null;
  }
  return {
    allowed: hit.count <= limit,
    limit,
    remaining: Math.max(0, limit - hit.count),
    resetSeconds: Math.max(1, Math.ceil(hit.resetMs / 1000)),
    windowSeconds: opts.windowSeconds,
  };
}

/** The IETF RateLimit header fields (draft-ietf-httpapi-ratelimit-headers) for one verdict. */
export function rateLimitHeaders(v: RateVerdict): Record<string, string> {
  return {
    'RateLimit-Limit': String(v.limit),
    'RateLimit-Remaining': String(v.remaining),
    'RateLimit-Reset': String(v.resetSeconds),
    'RateLimit-Policy': `${v.limit};w=${v.windowSeconds}`,
  };
}

/** The 429 body every rate limit answers with (HTTP and graphql-ws alike). */
export const rateLimitedError = (message: string, v: RateVerdict) => ({
  message,
  extensions: { code: 'RATE_LIMITED', retryAfterSeconds: v.resetSeconds },
});

export type KeyRateLimit = {
  /** counts one request of this caller against its role's limit; null when not limited */
  count(caller: Caller): Promise<RateVerdict | null>;
  /** the Hono middleware: 429 past the limit, RateLimit-* headers on every answer */
  middleware: MiddlewareHandler<{ Variables: AuthVariables }>;
};

/**
 * A per-API-key fixed-window rate limit: over its role's limit in `windowSeconds` is answered 429 with code
 * RATE_LIMITED and `Retry-After`. Runs after authentication, so the key is known and counted by client id. The
 * RateLimit-* headers are set on the answer the handler produced (after it ran), so they reach the client on every
 * answer, 200 or 429. `limit`: one number for every role, or per role.
 * @example app.use('/graphql', rateLimit({ limit: { storefront: 300_000 }, windowSeconds: 60, store: memoryRateLimitStore() }).middleware)
 */
export function rateLimit(opts: {
  limit: number | RoleLimits;
  windowSeconds: number;
  store: RateLimitStore;
  /** told when the store fails; the request is then let through (a Redis outage must not take the API down) */
  onStoreError?: (err: unknown) => void;
}): KeyRateLimit {
  const limitOf = (role: Role) => (typeof opts.limit === 'number' ? opts.limit : (opts.limit[role] ?? 0));
  const count = (caller: Caller) => countRequest(opts, `rl:${caller.clientId}`, limitOf(caller.role));
  return {
    count,
    async middleware(c, next) {
      const caller = c.get('caller');
      const verdict = caller ? await count(caller) : null;
      if (!verdict) return next();
      const headers = rateLimitHeaders(verdict);
      if (!verdict.allowed) {
        const message = `rate limit of ${verdict.limit} requests per ${verdict.windowSeconds}s exceeded for this API key`;
        return c.json({ errors: [rateLimitedError(message, verdict)] }, 429, {
          ...headers,
          'Retry-After': String(verdict.resetSeconds),
        });
      }
      await next();
      // on the answer itself: headers set before the handler ran were lost when it returned its own Response. A
      // limit that answered first (the per-buyer 429) keeps its own figures.
      if (c.res.headers.has('RateLimit-Limit')) return;
      try {
        for (const [name, value] of Object.entries(headers)) c.res.headers.set(name, value);
      } catch {
        c.res = new Response(c.res.body, c.res); // immutable headers (e.g. a cached Response): copy, then set
        for (const [name, value] of Object.entries(headers)) c.res.headers.set(name, value);
      }
    },
  };
}
