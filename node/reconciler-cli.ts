// `npm run worker:reconciler`: the reconciler and the compensation worker alone, beside any number of API instances.
// Needs DATABASE_URL and a processor reachable by every instance (SANDBOX_PAYMENTS_URL or PAYMENT_PROVIDER=stripe).
import pino from 'pino';
import { createDb } from '../db/pool.js';
import { createMetrics } from '../common/metrics.js';
import { startReconciler } from '../orders/reconciler.js';
import { loadConfig } from './config.js';
import { wirePayments } from './payments.js';
import { runEntry } from './entry.js';

void runEntry({
  config: (env) =>
    loadConfig(env, (c, problem) => {
      if (!c.database.url) problem('DATABASE_URL', 'required by the standalone reconciler');
      if (c.payments.provider === 'sandbox' && !c.payments.sandboxUrl)
        problem(
          'SANDBOX_PAYMENTS_URL',
          'required by the standalone reconciler (an in-process sandbox knows no payments)',
        );
    }),
  async start(config) {
    const logger = pino({ level: config.runtime.logLevel, base: { service: 'lastunit-reconciler' } });
    const url = config.database.url!; // required above
    const db = createDb({
      connectionString: url,
      max: 4,
      applicationName: 'lastunit-reconciler',
      timeouts: config.database.timeouts,
    });
    const payments = await wirePayments(config.payments, config.webhooks);
    const stop = startReconciler(
      { db, metrics: createMetrics(), processor: payments.processor, capture: config.payments.capture },
      {
        intervalMs: config.payments.reconcileIntervalMs,
        onError: (err) => logger.error({ err }, 'reconciler failed; retrying next tick'),
      },
    );
    logger.info('reconciler running');
    return {
      stop: async () => {
        await stop();
        await payments.stop();
        await db.end();
      },
    };
  },
});
