// Cloudflare Workers entry (wrangler.toml `main`): the same Hono app as the Node host, on @neondatabase/serverless,
// with persisted public GET queries served from the Cache API. Subscriptions stay on the Node host.
// Nothing reachable from here may need Node (test/worker-bundle.test.ts bundles this file and checks).
import type { YogaLogger } from 'graphql-yoga';
import { createApp } from '../app/app.js';
import { ConfigError, loadWorkerConfig, type WorkerConfig } from './worker-config.js';
import { noopMetrics } from './noop-metrics.js';
import { edgeCache } from './edge-cache.js';
import { useManifestOperations } from './use-manifest-operations.js';
import { isPublicRead, shippedManifest } from './persisted-manifest.js';
import { cachedPartnerDocuments, partnerAppOf } from './partner-documents.js';
import type { Caller } from '../common/caller.js';
import { createNeonDb } from '../db/neon.js';
import type { Db } from '../db/wrap-pool.js';

type ExecutionContext = { waitUntil(p: Promise<unknown>): void; passThroughOnException(): void; props: any };

const consoleLogger: YogaLogger = {
  debug: () => {},
  info: (...a: unknown[]) => console.info(...a),
  warn: (...a: unknown[]) => console.warn(...a),
  error: (...a: unknown[]) => console.error(...a),
};

/** Connections of one request's pool: a request runs a few statements at once at most. */
const POOL_SIZE = 5;

/** Bindings do not change within an isolate: configuration is parsed and the app built once per isolate. */
let isolate: { config: WorkerConfig; app: ReturnType<typeof createApp>['app'] } | undefined;

function setup(env: Record<string, unknown>) {
  if (isolate) return isolate;
  const config = loadWorkerConfig(env);
  // Partner apps' documents, cached in this isolate: the edge cache and the persisted-operations plugin share it.
  const partnerDocuments = cachedPartnerDocuments();
  const { app } = createApp({
    db: (c) => (c.env as { db: () => Db }).db(),
    metrics: noopMetrics(),
    keys: config.auth.apiKeys,
    logger: consoleLogger,
    production: config.runtime.nodeEnv === 'production',
    limits: config.limits,
    settings: config.orders,
    buyerTokenSecret: config.buyerTokens.secret,
    // Cloudflare sets it from the connection; a client cannot forge it through Cloudflare (the public key's buyer)
    clientIp: (c) => c.req.header('cf-connecting-ip') || undefined,
    persistedOperations: (partyOf) => useManifestOperations({ manifest: shippedManifest, partyOf, partnerDocuments }),
    graphqlCache: (origin) =>
      edgeCache({
        ttlSeconds: config.edgeCache.ttlSeconds,
        staleWhileRevalidateSeconds: config.edgeCache.staleWhileRevalidateSeconds,
        cache: () => (globalThis as unknown as { caches: { default: Cache } }).caches.default,
        isCacheable: async (id, c) => {
          const shipped = shippedManifest.operations[id];
          if (shipped) return shipped.cacheable;
          // a partner app's own public read, for that app's keys only: a hit must never serve an id its caller may not run
          const app = partnerAppOf(c.get('caller') as Caller | undefined);
          // a failed lookup only means "not from the cache": the request itself then meets the same failure, masked
          const doc = app ? await partnerDocuments((c.env as { db: () => Db }).db, app, id).catch(() => null) : null;
          return !!doc && isPublicRead(doc.operationType, doc.rootFields);
        },
        origin,
      }),
  });
  return (isolate = { config, app });
}

export default {
  async fetch(request: Request, env: Record<string, unknown>, ctx: ExecutionContext): Promise<Response> {
    let app: ReturnType<typeof setup>;
    try {
      app = setup(env);
    } catch (err) {
      // the message names the bad variables; it may quote values, so it goes to the log, not to the client
      console.error(err instanceof ConfigError ? err.message : err);
      return Response.json(
        { errors: [{ message: 'worker misconfigured', extensions: { code: 'MISCONFIGURED' } }] },
        { status: 500 },
      );
    }
    // A pool per request: Workers may not share sockets between requests. Created on first use (a cache hit never
    // needs one) and ended once the response and every background task of this request (cache writes,
    // stale-while-revalidate refreshes) are done.
    let pool: Db | undefined;
    const { database } = app.config;
    const db = () =>
      (pool ??= createNeonDb({
        connectionString: database.url,
        wsProxy: database.neonWsProxy,
        max: POOL_SIZE,
        timeouts: database.timeouts,
      }));
    const tasks: Promise<unknown>[] = [];
    const requestCtx: ExecutionContext = {
      waitUntil: (p) => void tasks.push(p),
      passThroughOnException: () => ctx.passThroughOnException(),
      props: ctx.props,
    };
    try {
      return await app.app.fetch(request, { db }, requestCtx);
    } finally {
      ctx.waitUntil(
        (async () => {
          for (let settled = 0; settled < tasks.length; ) {
            const batch = tasks.slice(settled);
            await Promise.allSettled(batch);
            settled += batch.length;
          }
          await pool?.end();
        })(),
      );
    }
  },
};
