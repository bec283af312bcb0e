import { Hono } from 'hono';
import { createYoga } from 'graphql-yoga';
import type { Logger } from 'pino';
import { schema } from '../schema/index.js';
import type { Context } from '../schema/context.js';
import { createOrders } from '../orders/orders.js';
import { createCatalog } from '../orders/catalog.js';
import type { Metrics } from '../orders/metrics.js';
import type { Db } from '../db/pool.js';
import { apiKeyAuth, type AuthVariables } from './api-keys.js';
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
};

/**
 * The HTTP surface shared by every host: /graphql (POST, and GET for queries), /healthz, /metrics,
 * POST /webhooks/payments/:provider.
 * @example const { app } = createApp(deps); serve({ fetch: app.fetch, port: 4000 })
 */
export function createApp(deps: AppDeps) {
  const orders = createOrders(deps);
  const catalog = createCatalog({ db: deps.db });
  const yoga = createYoga<{ caller: Context['caller'] }>({
    schema,
    graphqlEndpoint: '/graphql',
    graphiql: deps.graphiql ? { title: 'lastunit' } : false,
    landingPage: false,
    maskedErrors: true,
    logging: deps.logger,
    context: ({ caller }): Context => ({ caller, orders, catalog }),
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

  return { app, yoga, orders, catalog };
}
