import { Hono, type Context as HonoContext, type MiddlewareHandler } from 'hono';
import { createYoga, type GraphiQLOptions, type Plugin, type YogaLogger } from 'graphql-yoga';
import { execute as graphqlExecute } from 'graphql';
import { schema } from '../schema/index.js';
import type { Caller } from '../common/caller.js';
import type { Context } from '../resolvers/context.js';
import { createOrders } from '../orders/orders.js';
import { createCatalog } from '../orders/catalog.js';
import { createPartnerDocuments } from '../orders/partner-documents.js';
import type { Metrics } from '../common/metrics.js';
import type { Db } from '../db/wrap-pool.js';
import type { LivePubSub } from '../subscriptions/pubsub.js';
import type { ProductCache } from '../subscriptions/availability-cache.js';
import { apiKeyAuth, bearerMatcher, createCallerLookup, type AuthVariables } from './api-keys.js';
import type { ApiKey } from '../common/caller.js';
import type { Limits, OrderSettings } from '../common/config-sections.js';
import type { AfterCommit } from '../common/after-commit.js';
import type { Processor } from '../payments/processor.js';
import type { PaymentSettings } from '../orders/payment-step.js';
import { paymentWebhooks } from './payment-webhooks.js';
import { channelWebhooks } from './channel-webhooks.js';
import { createChannels } from '../orders/channels.js';
import { createShopConsole } from '../orders/shop-console.js';
import type { SaleActivity } from '../common/sale-activity.js';
import { createEvents, type EventsDeps } from '../orders/events.js';
import { useLimits } from './use-limits.js';
import { useOperationGuard } from './use-operation-guard.js';
import { useNoIntrospection } from './use-no-introspection.js';
import { refuseBatches, requestBodyLimit, useSharedBody } from './request-guards.js';
import { createDocumentCheck } from './document-check.js';
import { refuseAmbiguousOperations } from './operation.js';
import { demoteInputErrors, maskFaultsNotInput } from './input-errors.js';
import type { KeyRateLimit } from './rate-limit.js';
import type { AdmitBuyer } from './buyer-rate-limit.js';

type Env = { Variables: AuthVariables };

/**
 * Queries and mutations run on graphql-js's own `execute` instead of Yoga's default executor, which snapshots every
 * variable value before coercing it and wraps each step for incremental delivery (@defer/@stream, which this schema does
 * not offer): on placeOrder that was about 40 µs of a request's CPU. Subscriptions keep Yoga's executor. A host's
 * `executionPlugins` come after this one and may replace it (the Node host compiles documents: node/compiled-execution.ts).
 */
const useGraphqlJsExecute = (): Plugin => ({ onExecute: ({ setExecuteFn }) => setExecuteFn(graphqlExecute) });

/** What the persisted-operations plugin may know of a request: who sent it, and this request's database (made on first use). */
export type RequestParty = { caller: Caller; db: () => Db };

export type AppDeps = {
  /** the database, or (Workers) a function giving this request's database */
  db: Db | ((c: HonoContext<Env>) => Db);
  metrics: Metrics;
  keys: ApiKey[];
  logger: YogaLogger;
  settings: OrderSettings;
  limits: Limits;
  /**
   * Node host: the bounds of the payment and marketplace webhook routes (WEBHOOK_MAX_BODY_BYTES,
   * WEBHOOK_TOLERANCE_SECONDS); absent (Workers): no webhook route
   */
  webhooks?: { maxBodyBytes: number; toleranceSeconds: number };
  /** when set, GET /metrics answers only `Authorization: Bearer <metricsToken>` (401 otherwise) */
  metricsToken?: string;
  /** production: introspection off */
  production?: boolean;
  /** GraphiQL on GET /graphql for browsers (outside production), with these options (e.g. default `headers`) */
  graphiql?: boolean | GraphiQLOptions;
  /** GraphiQL's page (Node host: node/graphiql.ts, its assets served by the host); absent: Yoga's, from a CDN */
  renderGraphiql?: (options: GraphiQLOptions) => string;
  /** the configured processor; absent: placeOrder refuses `payment` and no webhook route answers */
  payments?: { processor: Processor; settings: PaymentSettings };
  /**
   * Plugins that replace how queries and mutations execute, after graphql-js's own (the Node host compiles them:
   * node/compiled-execution.ts); absent: graphql-js
   */
  executionPlugins?: Plugin[];
  /** what subscriptions listen on (Node host: in-process or Redis); absent: no subscriptions here (Workers) */
  pubsub?: LivePubSub;
  /** the Redis availability cache, when there is one (reads only) */
  cache?: ProductCache;
  /** told after a committed write that produced outbox rows (the debounced NOTIFY that wakes relays) */
  onOutboxWritten?: AfterCommit;
  /**
   * The persisted operations both hosts serve (edge/use-manifest-operations.ts), as a Yoga plugin built from how this
   * app knows who sent a request (a partner's app documents live in that request's database); absent: documents only,
   * for every role.
   */
  persistedOperations?: (partyOf: (request: Request) => RequestParty | undefined) => Plugin;
  /** Node host: the per-key rate limit (app/rate-limit.ts), run right after authentication */
  rateLimit?: KeyRateLimit;
  /** Node host: the per-buyer rate limit on placeOrder (app/buyer-rate-limit.ts) */
  admitBuyer?: AdmitBuyer;
  /** BUYER_TOKEN_SECRET: signs and checks buyer tokens (orders/buyer-tokens.ts); absent: none minted or accepted */
  buyerTokenSecret?: string;
  /**
   * The client's address as this host knows it (Node: the connection, or X-Forwarded-For under TRUST_PROXY; Workers:
   * cf-connecting-ip): the buyer of a `public` key (orders/buyer.ts). Absent or undefined: unknown.
   */
  clientIp?: (c: HonoContext<Env>) => string | undefined;
  /** Marketplace channels (docs/channels.md): whom to wake when a marketplace order left work for the pusher (an oversell's cancellation) */
  channels?: { onIncident?: () => void };
  /**
   * Node host: whether this process should get traffic (/readyz): not draining, a writable primary, migrations
   * current. Absent: /readyz asks the database for `SELECT 1`.
   */
  readiness?: () => Promise<{ ready: boolean; reasons: string[] }>;
  /** Node host: this process's per-second sale series for the console (common/sale-activity.ts); absent: empty */
  activity?: SaleActivity;
  /**
   * The event feed and webhook endpoints (docs/events.md): the URL rules of this host (production: https only; the
   * Node host resolves and checks the address), the rotation overlap, and whom to wake after a redelivery. Absent:
   * production rules without a DNS check.
   */
  events?: Omit<EventsDeps, 'db'>;
  /** Workers host: a cache in front of GraphQL (edge/edge-cache.ts), given the origin that answers a request */
  graphqlCache?: (origin: (request: Request, c: HonoContext<Env>) => Promise<Response>) => MiddlewareHandler<Env>;
};

// The HTTP surface both hosts share (Node: node/host.ts, Workers: edge/worker.ts); host-specific pieces come in as deps.

/**
 * The HTTP surface shared by every host: /graphql (POST, and GET for queries), /healthz, /readyz, /metrics,
 * POST /webhooks/payments/:provider. Host-specific pieces (database, metrics, logger, payments, pubsub, rate limit,
 * edge cache) come in through `deps`.
 * @example const { app } = createApp(deps); serve({ fetch: app.fetch, port: 4000 })
 */
export function createApp(deps: AppDeps) {
  // A partner's document is checked at publish time against the limits this app enforces at call time.
  const checkDocument = createDocumentCheck(schema, deps.limits);
  const domainFor = (db: Db) => ({
    orders: createOrders({
      db,
      metrics: deps.metrics,
      settings: deps.settings,
      payments: deps.payments,
      onOutboxWritten: deps.onOutboxWritten,
      buyerTokenSecret: deps.buyerTokenSecret,
    }),
    catalog: createCatalog({
      db,
      cache: deps.cache,
      onOutboxWritten: deps.onOutboxWritten,
      keyRetentionHours: deps.settings.idempotencyRetentionHours,
    }),
    partners: createPartnerDocuments({ db, checkDocument }),
    channels: createChannels({ db }),
    shopConsole: createShopConsole({ db, activity: deps.activity, onPushRetried: deps.channels?.onIncident }),
    events: createEvents({
      db,
      ...(deps.events ?? { production: true, allowPrivateUrls: false, secretOverlapHours: 24 }),
    }),
  });
  const fixed = typeof deps.db === 'function' ? undefined : domainFor(deps.db);
  const dbOf = (c: HonoContext<Env>): Db => (typeof deps.db === 'function' ? deps.db(c) : deps.db);
  const domainOf = (c: HonoContext<Env>) => fixed ?? domainFor(dbOf(c));
  const live = deps.pubsub;

  // The persisted-operations plugin sees only the Request: the caller authentication found travels beside it.
  const parties = new WeakMap<Request, RequestParty>();
  type YogaServerContext = { caller: Caller } & Pick<
    Context,
    'orders' | 'catalog' | 'partners' | 'channels' | 'shopConsole' | 'events' | 'admitBuyer'
  >;
  // A placeOrder's buyer, resolved once per request and input (a buyer token is verified once): the operation guard
  // counts it against the per-buyer rate limit, then the resolver places the order with it.
  const buyerMemo = (orders: Context['orders'], caller: Caller): Context['buyerOf'] => {
    const seen = new Map<string, ReturnType<Context['buyerOf']>>();
    return (input) => {
      const key = JSON.stringify([input.customerId, input.buyerToken ?? null]);
      let r = seen.get(key);
      if (!r) seen.set(key, (r = orders.buyerOf(caller, input)));
      return r;
    };
  };
  const yoga = createYoga<YogaServerContext>({
    schema,
    graphqlEndpoint: '/graphql',
    graphiql: deps.graphiql
      ? { title: 'lastunit', ...(typeof deps.graphiql === 'object' ? deps.graphiql : {}) }
      : false,
    renderGraphiQL: deps.renderGraphiql,
    landingPage: false,
    // faults are masked (`Unexpected error.`); input only the database refuses is a 400 BAD_USER_INPUT saying why
    maskedErrors: { maskError: maskFaultsNotInput },
    batching: false,
    // requestBodyLimit below refuses a larger body before Yoga sees it (Yoga's own limit would rebuild every request
    // around a counting stream)
    maxRequestBodySize: false,
    logging: demoteInputErrors(deps.logger),
    plugins: [
      useGraphqlJsExecute(),
      ...(deps.executionPlugins ?? []),
      useSharedBody(),
      ...(deps.persistedOperations ? [deps.persistedOperations((req) => parties.get(req))] : []),
      useNoIntrospection({ enabled: !!deps.production }),
      useLimits(deps.limits),
      useOperationGuard(), // I15: after every check of the document, before any field runs
    ],
    context: ({ caller, orders, catalog, partners, channels, shopConsole, events, admitBuyer }): Context => ({
      caller,
      orders,
      catalog,
      partners,
      channels,
      shopConsole,
      events,
      live,
      admitBuyer,
      buyerOf: buyerMemo(orders, caller),
    }),
  });
  const runYoga = (req: Request, c: HonoContext<Env>) => {
    const caller = c.get('caller');
    if (caller) parties.set(req, { caller, db: () => dbOf(c) });
    // The server context reaches Yoga as an object whose fields are inherited, not its own: Yoga's adapter copies every
    // OWN property of it per request (property descriptors, twice: about 20 us of CPU on a request here), then reads
    // them through an object inheriting from it, so inherited fields are read the same and nothing is copied.
    const serverContext: YogaServerContext = { caller, ...domainOf(c), admitBuyer: deps.admitBuyer };
    return Promise.resolve(yoga.fetch(req, Object.create(serverContext) as YogaServerContext));
  };

  const app = new Hono<Env>();
  const wantsGraphiql = (req: Request) =>
    !!deps.graphiql && req.method === 'GET' && (req.headers.get('accept') ?? '').includes('text/html');

  // Liveness: this process answers (no database call: a database outage must not get every process restarted).
  app.get('/healthz', (c) => c.json({ status: 'ok' }));
  // Readiness: a writable primary is reachable and its migrations are this code's; 503 while draining (docs/deploy.md).
  app.get('/readyz', async (c) => {
    const r = deps.readiness
      ? await deps.readiness().catch((err: unknown) => ({ ready: false, reasons: [`database: ${String(err)}`] }))
      : await dbOf(c)
          .query('SELECT 1')
          .then(
            () => ({ ready: true, reasons: [] as string[] }),
            () => ({ ready: false, reasons: ['database unreachable'] }),
          );
    return r.ready
      ? c.json({ status: 'ready' })
      : c.json({ status: 'unavailable', reasons: r.reasons }, 503, { 'Retry-After': '1' });
  });
  const metricsAllowed = deps.metricsToken ? bearerMatcher(deps.metricsToken) : async () => true;
  app.get('/metrics', async (c) => {
    if (!(await metricsAllowed(c.req.header('authorization'))))
      return c.json(
        {
          errors: [
            { message: 'metrics need Authorization: Bearer <METRICS_TOKEN>', extensions: { code: 'UNAUTHENTICATED' } },
          ],
        },
        401,
        {
          'WWW-Authenticate': 'Bearer realm="lastunit-metrics"',
        },
      );
    return c.text(await deps.metrics.registry.metrics(), 200, { 'Content-Type': deps.metrics.registry.contentType });
  });
  // Payments webhooks are a Node-host route (the processor and the reconciler live there).
  if (deps.webhooks && typeof deps.db !== 'function')
    app.route(
      '/webhooks/payments',
      paymentWebhooks({
        db: deps.db,
        metrics: deps.metrics,
        processors: deps.payments ? [deps.payments.processor] : [],
        onOutboxWritten: deps.onOutboxWritten,
        maxBodyBytes: deps.webhooks.maxBodyBytes,
      }),
    );
  // Marketplace order webhooks, also a Node-host route (the pusher that answers oversells lives there).
  if (deps.webhooks && typeof deps.db !== 'function')
    app.route(
      '/webhooks/channels',
      channelWebhooks({
        db: deps.db,
        metrics: deps.metrics,
        onOutboxWritten: deps.onOutboxWritten,
        maxBodyBytes: deps.webhooks.maxBodyBytes,
        toleranceSeconds: deps.webhooks.toleranceSeconds,
        onIncident: deps.channels?.onIncident,
      }),
    );
  app.use('/graphql', requestBodyLimit(deps.limits.maxBodyBytes));
  app.use('/graphql', apiKeyAuth(deps.keys, { allowAnonymous: wantsGraphiql }));
  if (deps.clientIp) {
    const clientIp = deps.clientIp;
    app.use('/graphql', async (c, next) => {
      const caller = c.get('caller');
      const ip = caller && clientIp(c);
      if (caller && ip) c.set('caller', { ...caller, ip }); // a copy: the key's caller object is shared by its requests
      return next();
    });
  }
  if (deps.rateLimit) app.use('/graphql', deps.rateLimit.middleware);
  app.use('/graphql', refuseBatches());
  app.use('/graphql', refuseAmbiguousOperations());
  if (deps.graphqlCache) app.use('/graphql', deps.graphqlCache(runYoga));
  app.on(['GET', 'POST', 'OPTIONS'], '/graphql', (c) => runYoga(c.req.raw, c));

  return {
    app,
    yoga,
    orders: fixed?.orders,
    catalog: fixed?.catalog,
    partners: fixed?.partners,
    channels: fixed?.channels,
    shopConsole: fixed?.shopConsole,
    events: fixed?.events,
    live,
    lookupCaller: createCallerLookup(deps.keys),
  };
}
