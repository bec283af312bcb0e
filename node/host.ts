// The Node host (`npm start`): the database, payments, marketplaces, live events, the HTTP app, graphql-ws and the
// background loops, wired from the configuration resolved once by node/config.ts.
import type { ServerType } from '@hono/node-server';
import { getConnInfo } from '@hono/node-server/conninfo';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import pino from 'pino';
import { openDatabase } from './database.js';
import { primaryProblems } from '../db/migrate.js';
import { seedProducts } from '../db/catalog-store.js';
import { createMetrics } from '../common/metrics.js';
import { startSweeper } from '../orders/sweeper.js';
import { startReconciler } from '../orders/reconciler.js';
import { wirePayments } from './payments.js';
import { wireMarketplaceSandbox } from './marketplace.js';
import { createApp } from '../app/app.js';
import { memoryRateLimitStore, rateLimit } from '../app/rate-limit.js';
import { buyerRateLimit } from '../app/buyer-rate-limit.js';
import { clientIpOf } from '../common/client-ip.js';
import { diagnosticsRoute } from './diagnostics.js';
import { redisOrMemoryRateLimitStore, redisRateLimitStore } from './rate-limit-redis.js';
import { clientIdFor, DEMO_SHOP_ROLES, generateDemoKeys } from '../app/api-keys.js';
import type { Config } from './config.js';
import type { ApiKey } from '../common/caller.js';
import { DEMO_CATALOG, DEMO_PARTNER_APP, DEMO_SHOP_CLIENT } from './demo-catalog.js';
import { livePage } from './live-page.js';
import { liveShop } from './live-shop.js';
import { graphiqlAssets, renderGraphiql } from './graphiql.js';
import { useManifestOperations } from '../edge/use-manifest-operations.js';
import { shippedManifest } from '../edge/persisted-manifest.js';
import { cachedPartnerDocuments } from '../edge/partner-documents.js';
import { connectRedis } from '../subscriptions/redis.js';
import { createLivePubSub } from '../subscriptions/pubsub.js';
import { createAvailabilityCache } from '../subscriptions/availability-cache.js';
import { createOutboxNotifier } from '../subscriptions/outbox-notifier.js';
import { startRelay } from '../subscriptions/relay.js';
import { attachGraphqlWs } from '../subscriptions/graphql-ws.js';
import { startChannelPusher } from '../orders/channel-pusher.js';
import { marketplaceClient } from '../channels/marketplace-client.js';
import { useCompiledExecution } from './compiled-execution.js';
import { listen } from './listen.js';
import { startSaleActivity } from '../common/sale-activity.js';
import { consolePage } from './console-page.js';
import { startTracing, tracedFetch } from './tracing.js';
import { traceFields } from '../common/tracing.js';
import { startWebhookDelivery } from '../orders/webhook-delivery.js';
import { checkWebhookHost, postWebhook } from './webhook-http.js';

export type NodeHost = {
  /** where this machine reaches it: http://127.0.0.1:PORT for a loopback or wildcard address, the address otherwise */
  url: string;
  /** the address and port the server bound, as the operating system reports them (e.g. 0.0.0.0:4000, [::1]:4000) */
  bound: string;
  port: number;
  keys: ApiKey[];
  embeddedDir?: string;
  stop: () => Promise<void>;
};

/** Demo keys survive restarts (under DATA_DIR) so orders stay visible to the same demo client. */
async function demoKeys(dataDir: string): Promise<ApiKey[]> {
  const file = path.join(dataDir, 'demo-keys.json');
  let keys: ApiKey[] | undefined;
  try {
    keys = JSON.parse(await readFile(file, 'utf8')) as ApiKey[];
  } catch {
    // none yet: minted below
  }
  // a file from before a role existed (e.g. `public`, the live page's) gets that role's key added, the others kept;
  // a partner key from before demo keys named an app gets the demo app (the partner examples publish for it), and
  // public and storefront keys from before they shared a client get the demo shop (the live page's buyer tokens)
  const missing = generateDemoKeys({ partnerApp: DEMO_PARTNER_APP, shopClient: DEMO_SHOP_CLIENT }).filter(
    (k) => !keys?.some((have) => have.role === k.role),
  );
  const appless = keys?.filter((k) => k.role === 'partner' && !k.client) ?? [];
  for (const k of appless) k.client = DEMO_PARTNER_APP;
  const shopless = keys?.filter((k) => DEMO_SHOP_ROLES.includes(k.role) && k.client !== DEMO_SHOP_CLIENT) ?? [];
  for (const k of shopless) k.client = DEMO_SHOP_CLIENT;
  if (!keys || missing.length || appless.length || shopless.length) {
    keys = [...(keys ?? []), ...missing];
    await mkdir(dataDir, { recursive: true });
    await writeFile(file, JSON.stringify(keys, null, 2), { mode: 0o600 });
  }
  return keys;
}

/** GraphiQL's default headers: the demo public key's Authorization, when this host minted the demo keys. */
function demoHeaders(demo: ApiKey[] | undefined): string | undefined {
  const key = demo?.find((k) => k.role === 'public')?.key;
  return key ? JSON.stringify({ Authorization: `Bearer ${key}` }, null, 2) : undefined;
}

/**
 * The Node host: database (embedded when DATABASE_URL is absent), migrations, payment processor (an in-process sandbox
 * unless configured otherwise), HTTP server, sweeper, reconciler and compensation worker.
 * @example const host = await startNodeHost(loadConfig(process.env, apiHostNeeds))
 */
export async function startNodeHost(config: Config): Promise<NodeHost> {
  // with tracing on, a line logged inside a request carries its trace_id and span_id (docs/operations.md)
  const stopTracing = startTracing(config.tracing);
  const logger = pino({
    level: config.runtime.logLevel,
    base: { service: 'lastunit' },
    ...(stopTracing ? { mixin: traceFields } : {}),
  });
  const production = config.runtime.nodeEnv === 'production';
  const metrics = createMetrics();
  const activity = startSaleActivity(metrics); // the console's per-second series (docs/console.md)
  const { db, url: databaseUrl, embedded, close } = await openDatabase(config.database, logger, metrics);
  if (embedded) {
    const created = await seedProducts(db, DEMO_CATALOG);
    if (created) logger.info({ created }, 'demo catalog seeded');
  }
  const keys = config.auth.apiKeys ?? (await demoKeys(config.database.dataDir));
  const payments = await wirePayments(config.payments, config.webhooks);
  // the marketplace sandbox and the demo channel, in development (before the pusher: it pushes to this start's port)
  const marketplace = config.channels.marketplaceSandbox ? await wireMarketplaceSandbox(db, logger) : undefined;

  // Live events: Redis pubsub + availability cache with REDIS_URL, in-process pubsub and no cache without.
  const { live } = config;
  const redis = live.redisUrl ? connectRedis(live.redisUrl, live.redisKeyPrefix, logger, metrics) : undefined;
  const pubsub = createLivePubSub({ redis, prefix: live.redisKeyPrefix });
  const cache = redis
    ? createAvailabilityCache(redis, { ttlSeconds: live.cacheTtlSeconds, metrics, logger })
    : undefined;
  const notifyRelays = createOutboxNotifier(db, {
    onError: (err) => logger.debug({ err }, 'outbox NOTIFY failed; the relay poll covers it'),
  });
  // After a committed write: wake the relays, and drop this instance's cached figures of the SKUs it changed so its
  // own next read is fresh (read-your-writes); other instances converge through the relay's versioned updates.
  // Marketplace channels: the pusher sends listed quantities the moment a stock change commits (docs/channels.md).
  let pusherErrorLogged = 0;
  const pusher = config.channels.pusher
    ? startChannelPusher({
        db,
        metrics,
        pollMs: config.channels.pollMs,
        clientFor: (c) =>
          marketplaceClient(c, {
            timeoutMs: config.channels.timeoutMs,
            shopifyAccessToken: config.channels.shopifyAccessToken,
          }),
        onError: (err) => {
          if (Date.now() - pusherErrorLogged > 10_000) {
            pusherErrorLogged = Date.now();
            logger.warn({ err }, 'channel pusher failed; listings stay pending and are retried');
          }
        },
      })
    : undefined;
  // Webhooks lastunit sends (docs/events.md): this process's delivery worker, woken after every committed write while
  // an endpoint is enabled.
  const hooks = config.webhookDelivery;
  if (hooks.allowPrivateUrls && production)
    logger.warn('WEBHOOK_ALLOW_PRIVATE_URLS=true: webhook endpoints may be http:// and reach private addresses');
  const webhookWorker = hooks.worker
    ? startWebhookDelivery({
        db,
        post: postWebhook,
        settings: hooks,
        onError: (err) => logger.warn({ err }, 'webhook delivery pass failed; retrying'),
      })
    : undefined;
  // this process's own relay reads the rows at once; without one, NOTIFY wakes the relays that LISTEN (a relay-only
  // process's, another instance's)
  let wakeRelay: (() => void) | undefined;
  const onOutboxWritten = async (skus?: string[]) => {
    // NOTIFY only for a process without a relay of its own: its own LISTEN would hear it too and drain again for nothing
    if (wakeRelay) wakeRelay();
    else notifyRelays();
    pusher?.wake();
    webhookWorker?.afterCommit();
    if (cache && skus?.length) await cache.invalidate(skus);
  };

  // Partner apps' published documents, looked up by id and kept in this process (edge/partner-documents.ts).
  const partnerDocuments = cachedPartnerDocuments();
  // With REDIS_URL the rate limits count across instances too (same Redis connection); while Redis is not up (not yet
  // connected at start, or down) they count in this process, so they still hold per instance.
  const rateLimitStore = redis
    ? redisOrMemoryRateLimitStore(
        redisRateLimitStore(redis.command, Date.now, live.redisKeyPrefix),
        memoryRateLimitStore(),
        redis.isUp,
        (err) => logger.warn({ err }, 'rate limit store failed; counted in this process instead'),
      )
    : memoryRateLimitStore();
  const onStoreError = (err: unknown) => logger.warn({ err }, 'rate limit store failed; request let through');
  const { rateLimits } = config;
  const keyLimit = rateLimit({
    limit: rateLimits.limit,
    windowSeconds: rateLimits.windowSeconds,
    store: rateLimitStore,
    onStoreError,
  });
  const trustProxy = config.http.trustProxy;
  // /readyz: not while draining (SIGTERM), nor on a standby or a database whose migrations are behind this code
  let draining = false;
  const readiness = async () => {
    if (draining) return { ready: false, reasons: ['draining: this process is shutting down'] };
    const reasons = await primaryProblems(db);
    return { ready: reasons.length === 0, reasons };
  };
  const { app, yoga, lookupCaller, orders, catalog, partners, channels, shopConsole } = createApp({
    db,
    metrics,
    keys,
    logger,
    // with the demo keys GraphiQL starts with the public one in its headers tab (the live page has it too)
    graphiql: !production && { headers: demoHeaders(config.auth.apiKeys ? undefined : keys) },
    renderGraphiql,
    persistedOperations: (partyOf) => useManifestOperations({ manifest: shippedManifest, partyOf, partnerDocuments }),
    executionPlugins: [
      useCompiledExecution({
        onError: (err) => logger.warn({ err }, 'graphql-jit could not compile a document; graphql-js runs it'),
      }),
    ],
    production,
    metricsToken: config.http.metricsToken,
    webhooks: config.webhooks,
    limits: config.limits,
    rateLimit: keyLimit,
    admitBuyer: buyerRateLimit({
      limit: rateLimits.buyerLimit,
      windowSeconds: rateLimits.windowSeconds,
      store: rateLimitStore,
      onStoreError,
    }),
    clientIp: (c) =>
      clientIpOf({
        remoteAddress: getConnInfo(c).remote.address,
        forwardedFor: c.req.header('x-forwarded-for'),
        trustProxy,
      }),
    settings: config.orders,
    buyerTokenSecret: config.buyerTokens.secret,
    payments,
    pubsub,
    cache,
    onOutboxWritten,
    channels: { onIncident: () => pusher?.wake() },
    readiness,
    activity,
    events: {
      production,
      allowPrivateUrls: hooks.allowPrivateUrls,
      checkHost: checkWebhookHost,
      secretOverlapHours: hooks.secretOverlapHours,
      onDeliveryQueued: () => webhookWorker?.wake(),
    },
  });
  let socketStats: (() => Record<string, number>) | undefined; // graphql-ws is attached once the server listens
  if (config.http.testDiagnostics && !production)
    app.route('/', diagnosticsRoute({ pubsub, sockets: () => socketStats?.() ?? {} }));
  if (!production) app.route('/', graphiqlAssets());
  // The shop's console (docs/console.md): outside production, or in production with CONSOLE=on.
  app.route('/', consolePage({ enabled: config.http.console }));
  // The live page's demo shop backend (development only): mints its buyer tokens with the storefront key of the page's
  // client, through this host's own /graphql (known once it listens, below).
  let graphqlUrl = '';
  const shopBackend = config.liveShop.backend && !production;
  if (shopBackend)
    app.route(
      '/',
      liveShop({
        lookupCaller,
        storefrontKeyOf: async (clientId) => {
          for (const k of keys) if (k.role === 'storefront' && (await clientIdFor(k)) === clientId) return k.key;
          return undefined;
        },
        endpoint: () => graphqlUrl,
        ttlSeconds: config.liveShop.tokenTtlSeconds,
      }),
    );
  // The page gets the demo public key only where this host minted the demo keys outside production; with API_KEYS,
  // or on a production demo box (EMBEDDED_DATABASE=allow), it asks for one (`?key=`).
  app.route(
    '/',
    livePage({
      listSkus: () => catalog!.listSkus(),
      productName: async (sku) => (await catalog!.findProducts([sku]))[0]?.name ?? null,
      maxLineQuantity: config.orders.maxLineQuantity,
      publicKey: config.auth.apiKeys || production ? undefined : keys.find((k) => k.role === 'public')?.key,
      buyerTokenPath: shopBackend ? '/live/buyer-token' : undefined,
      channelListings: (sku) => channels!.listingsOfSku(sku),
      lookupCaller,
    }),
  );
  const stopSweeper = startSweeper(db, metrics, {
    ...config.sweeper,
    onOutboxWritten,
    onError: (err) => logger.error({ err }, 'sweeper failed; retrying next tick'),
  });
  let relayErrorLogged = 0;
  const stopRelay = live.relay
    ? startRelay({
        db,
        pubsub,
        metrics,
        cache,
        batchSize: live.relayBatchSize,
        leaseMs: live.relayLeaseMs,
        // LISTEN needs a session of its own: never through a transaction pooler (docs/deploy.md)
        listenUrl: config.database.directUrl ?? (embedded ? databaseUrl : undefined),
        pollMs: live.relayPollMs,
        onError: (err) => {
          // at most one line per 10 s while e.g. Redis is down: the rows wait in the outbox
          if (Date.now() - relayErrorLogged > 10_000) {
            relayErrorLogged = Date.now();
            logger.warn({ err }, 'outbox relay failed; events stay in the outbox and are retried');
          }
        },
      })
    : undefined;
  wakeRelay = stopRelay?.wake;

  const stopReconciler = startReconciler(
    { db, metrics, processor: payments.processor, onOutboxWritten, capture: config.payments.capture },
    {
      intervalMs: config.payments.reconcileIntervalMs,
      onError: (err) => logger.error({ err }, 'reconciler failed; retrying next tick'),
    },
  );

  const fetch = stopTracing ? tracedFetch(app.fetch, logger) : app.fetch;
  const server: ServerType = await listen(fetch, { port: config.http.port, host: config.http.host });
  const ws = attachGraphqlWs(server as any, {
    yoga,
    lookupCaller,
    isProd: production,
    context: { orders, catalog, partners, channels, shopConsole },
    maxPayloadBytes: config.limits.maxBodyBytes,
    ...live.sockets,
    clientIp: (req) =>
      clientIpOf({
        remoteAddress: req.socket.remoteAddress,
        forwardedFor: req.headers['x-forwarded-for']?.toString(),
        trustProxy,
      }),
    admit: keyLimit.count,
  });
  socketStats = ws.stats;
  const { address, family, port } = server.address() as AddressInfo;
  const shown = family === 'IPv6' ? `[${address}]` : address;
  // a wildcard address is reached from this machine as 127.0.0.1; a specific one (loopback or not) by itself
  const reachAt = address === '0.0.0.0' || address === '::' ? '127.0.0.1' : shown;
  const url = `http://${reachAt}:${port}`;
  graphqlUrl = `${url}/graphql`;
  payments.setWebhookUrl(`${url}/webhooks/payments/sandbox`);
  marketplace?.setWebhookUrl(url);

  let stopping: Promise<void> | undefined;
  const stop = () =>
    (stopping ??= (async () => {
      draining = true;
      // a load balancer sees /readyz fail and stops sending before the listener closes
      if (config.http.drainMs) await new Promise((r) => setTimeout(r, config.http.drainMs));
      activity.stop();
      await ws.dispose();
      await new Promise<void>((r) => server.close(() => r()));
      await Promise.all([stopSweeper(), stopRelay?.(), stopReconciler(), pusher?.stop(), webhookWorker?.stop()]);
      await payments.stop();
      await marketplace?.stop();
      await redis?.close();
      await close();
      await stopTracing?.();
    })());
  return { url, bound: `${shown}:${port}`, port, keys, embeddedDir: embedded?.dir, stop };
}
