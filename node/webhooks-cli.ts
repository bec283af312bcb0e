// `npm run worker:webhooks`: the webhook delivery worker alone (set WEBHOOK_DELIVERY=off on the API instances to run it
// only here; any number of these share the work). Needs DATABASE_URL. docs/events.md.
import pino from 'pino';
import { loadConfig } from './config.js';
import { createDb } from '../db/pool.js';
import { startWebhookDelivery } from '../orders/webhook-delivery.js';
import { postWebhook } from './webhook-http.js';
import { runEntry } from './entry.js';

void runEntry({
  config: (env) =>
    loadConfig(env, (c, problem) => {
      if (!c.database.url) problem('DATABASE_URL', 'required by the webhook worker');
    }),
  async start(config) {
    const logger = pino({ level: config.runtime.logLevel, base: { service: 'lastunit-webhooks' } });
    const db = createDb({
      connectionString: config.database.url!, // required above
      max: 4,
      applicationName: 'lastunit-webhooks',
      timeouts: config.database.timeouts,
    });
    if (config.webhookDelivery.allowPrivateUrls && config.runtime.nodeEnv === 'production')
      logger.warn('WEBHOOK_ALLOW_PRIVATE_URLS=true: webhooks may reach loopback and private addresses');
    const worker = startWebhookDelivery({
      db,
      post: postWebhook,
      settings: config.webhookDelivery,
      onError: (err) => logger.warn({ err }, 'webhook delivery pass failed; retrying'),
    });
    return {
      lines: ['lastunit webhook worker running'],
      stop: async () => {
        await worker.stop();
        await db.end();
      },
    };
  },
});
