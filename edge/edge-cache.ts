import type { Context, MiddlewareHandler } from 'hono';
import { operationIdOf } from './persisted-manifest.js';

export type EdgeCacheOptions = {
  ttlSeconds: number;
  staleWhileRevalidateSeconds: number;
  /** the Cache API store, e.g. `caches.default` in Workers */
  cache: () => Cache | Promise<Cache>;
  /**
   * true only for persisted operations that read public data and that this caller may run (the shipped manifest's
   * `cacheable` flag; a partner app's own public reads, for that app's keys)
   */
  isCacheable: (operationId: string, c: Context) => boolean | Promise<boolean>;
  /** a fresh answer for `request`, used to revalidate a stale entry after the response has gone */
  origin: (request: Request, c: Context) => Promise<Response>;
  now?: () => number;
};

export const CACHE_HEADER = 'x-lastunit-cache';
const STORED_AT = 'x-lastunit-stored-at';

/** JSON with object keys sorted at every level, so the same variables always make the same key. */
function canonicalJson(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonicalJson).join(',')}]`;
  if (v && typeof v === 'object') {
    const o = v as Record<string, unknown>;
    return `{${Object.keys(o)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonicalJson(o[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(v) ?? 'null';
}

/**
 * The cache key: the operation id, its variables (canonical JSON) and the response media type. Never the API key:
 * only public data (availability, prices) is ever cached, so every client may share an entry.
 */
function cacheKey(url: URL, operationId: string, accept: string): Request | null {
  let variables = '{}';
  const raw = url.searchParams.get('variables');
  if (raw) {
    try {
      variables = canonicalJson(JSON.parse(raw));
    } catch {
      return null;
    }
  }
  const key = new URL('/__edge-cache/graphql', url.origin);
  key.searchParams.set('id', operationId);
  key.searchParams.set('variables', variables);
  key.searchParams.set('operationName', url.searchParams.get('operationName') ?? '');
  key.searchParams.set('accept', accept.includes('application/graphql-response+json') ? 'gql' : 'json');
  return new Request(key.toString(), { method: 'GET' });
}

const withCacheHeader = (res: Response, state: 'HIT' | 'MISS' | 'STALE', ttl: number, swr: number) => {
  const out = new Response(res.body, res);
  out.headers.set(CACHE_HEADER, state);
  out.headers.delete(STORED_AT);
  out.headers.set('cache-control', `public, max-age=${ttl}, stale-while-revalidate=${swr}`);
  return out;
};

/** Only a complete, error-free 200 answer is worth keeping. */
async function storable(res: Response): Promise<boolean> {
  if (res.status !== 200) return false;
  try {
    const body = (await res.clone().json()) as { errors?: unknown };
    return !body.errors;
  } catch {
    return false;
  }
}

/**
 * Serves GET persisted public queries from the Cache API for `ttlSeconds` (HIT), then for `staleWhileRevalidateSeconds`
 * more while one background request refreshes the entry (STALE); otherwise runs the request (MISS) and stores the answer.
 * Everything else (POST, mutations, `order`, documents) passes through untouched and is never stored.
 * @example app.use('/graphql', edgeCache({ ttlSeconds: 2, staleWhileRevalidateSeconds: 10, cache: () => caches.default, ... }))
 */
export function edgeCache(opts: EdgeCacheOptions): MiddlewareHandler {
  const now = opts.now ?? Date.now;
  const ttl = opts.ttlSeconds;
  const swr = opts.staleWhileRevalidateSeconds;
  const refreshing = new Set<string>();

  const store = async (cache: Cache, key: Request, res: Response) => {
    if (!(await storable(res))) return;
    const copy = new Response(res.body, res);
    copy.headers.set(STORED_AT, String(now()));
    copy.headers.set('cache-control', `public, max-age=${ttl + swr}`);
    copy.headers.delete('set-cookie');
    await cache.put(key, copy);
  };

  return async function edgeCache(c, next) {
    if (c.req.method !== 'GET' || ttl === 0) return next();
    const url = new URL(c.req.url);
    // A request carrying a document runs that document, whatever id it also names: never cache it under the id.
    if (url.searchParams.has('query')) return next();
    const id = operationIdOf({}, url);
    if (!id || !(await opts.isCacheable(id, c))) return next();
    const key = cacheKey(url, id, c.req.header('accept') ?? '');
    if (!key) return next();
    const cache = await opts.cache();

    const hit = await cache.match(key);
    const age = hit ? now() - Number(hit.headers.get(STORED_AT) ?? 0) : Infinity;
    if (hit && age < ttl * 1000) return withCacheHeader(hit, 'HIT', ttl, swr);
    if (hit && age < (ttl + swr) * 1000) {
      if (!refreshing.has(key.url)) {
        refreshing.add(key.url);
        const refresh = opts
          .origin(new Request(c.req.raw.url, { method: 'GET', headers: c.req.raw.headers }), c)
          .then((res) => store(cache, key, res))
          .catch(() => {})
          .finally(() => refreshing.delete(key.url));
        c.executionCtx.waitUntil(refresh);
      }
      return withCacheHeader(hit, 'STALE', ttl, swr);
    }

    await next();
    if (c.res.status === 200) {
      const res = c.res;
      c.executionCtx.waitUntil(store(cache, key, res.clone()));
      c.res = withCacheHeader(res, 'MISS', ttl, swr);
    }
  };
}
