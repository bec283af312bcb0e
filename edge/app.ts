import { Hono } from 'hono';
import { createYoga } from 'graphql-yoga';
import type { Logger } from 'pino';
import { schema } from '../schema/index.js';
import type { Context } from '../schema/context.js';
import { createOrders } from '../orders/orders.js';
import { createCatalog } from '../orders/catalog.js';
import type { Metrics } from '../orders/metrics.js';
import type { Db } from '../db/pool.js';
import { createLivePubSub, type LivePubSub } from '../subscriptions/pubsub.js';
import type { ProductCache } from '../subscriptions/availability-cache.js';
import { apiKeyAuth, createCallerLookup, type AuthVariables } from './api-keys.js';
import type { ApiKey } from './config.js';
import type { Processor } from '../payments/processor.js';
import type { PaymentSettings } from '../orders/payment-step.js';
import { paymentWebhooks } from './payment-webhooks.js';

export type AppDeps = {
  db: Db;
  metrics: Metrics;
  keys: ApiKey[];
  logger: Logger;
  settings: { holdTtlSeconds: number; idempotencyRetentionHours: number; maxLines: number; maxLineQuantity: number };
  graphiql?: boolean;
  /** the configured processor; absent: placeOrder refuses `payment` and no webhook route answers */
  payments?: { processor: Processor; settings: PaymentSettings };
  /** what subscriptions listen on; in-process when absent */
  pubsub?: LivePubSub;
  /** the Redis availability cache, when there is one (reads only) */
  cache?: ProductCache;
  /** told after a committed write that produced outbox rows (the debounced NOTIFY that wakes relays) */
  onOutboxWritten?: () => void;
};

/**
 * The HTTP surface shared by every host: /graphql (POST, and GET for queries), /healthz, /metrics,
 * POST /webhooks/payments/:provider.
 * @example const { app } = createApp(deps); serve({ fetch: app.fetch, port: 4000 })
 */
export function createApp(deps: AppDeps) {
  const orders = createOrders(deps);
  const catalog = createCatalog({ db: deps.db, cache: deps.cache, onOutboxWritten: deps.onOutboxWritten });
  const live = deps.pubsub ?? createLivePubSub();
  const yoga = createYoga<{ caller: Context['caller'] }>({
    schema,
    graphqlEndpoint: '/graphql',
    graphiql: deps.graphiql ? { title: 'lastunit' } : false,
    landingPage: false,
    maskedErrors: true,
    logging: deps.logger,
    context: ({ caller }): Context => ({ caller, orders, catalog, live }),
  });

  const app = new Hono<{ Variables: AuthVariables }>();
  const wantsGraphiql = (req: Request) =>
    !!deps.graphiql && req.method === 'GET' && (req.headers.get('accept') ?? '').includes('text/html');

  app.get('/healthz', async (c) => {
    try {
      await deps.db.query('SELECT 1');
      return c.json({ status: 'ok' });
    } catch {
      return c.json({ status: 'unavailable', database: 'unreachable' }, 503);
    }
  });
  app.get('/metrics', async (c) => c.text(await deps.metrics.registry.metrics(), 200, { 'Content-Type': deps.metrics.registry.contentType }));
  app.route('/webhooks/payments', paymentWebhooks({ db: deps.db, metrics: deps.metrics, processors: deps.payments ? [deps.payments.processor] : [] }));
  app.use('/graphql', apiKeyAuth(deps.keys, { allowAnonymous: wantsGraphiql }));
  app.on(['GET', 'POST', 'OPTIONS'], '/graphql', (c) => yoga.fetch(c.req.raw, { caller: c.get('caller') }));

  return { app, yoga, orders, catalog, live, lookupCaller: createCallerLookup(deps.keys) };
}
