// `npm run worker:reconciler`: the reconciler and the compensation worker alone, beside any number of API instances.
// Needs DATABASE_URL and a processor reachable by every instance (SANDBOX_PAYMENTS_URL or PAYMENT_PROVIDER=stripe).
import pino from 'pino';
import { createDb } from '../db/pool.js';
import { createMetrics } from '../common/metrics.js';
import { startReconciler } from '../orders/reconciler.js';
import { ConfigError, loadConfig } from './config.js';
import { wirePayments } from './payments.js';
import { runEntry } from './entry.js';

void runEntry({
  config(env) {
    const config = loadConfig(env);
    if (!config.databaseUrl) throw new ConfigError('invalid configuration:\n  DATABASE_URL: required by the standalone reconciler');
    if (config.payments.provider === 'sandbox' && !config.payments.sandboxUrl)
      throw new ConfigError('invalid configuration:\n  SANDBOX_PAYMENTS_URL: required by the standalone reconciler (an in-process sandbox knows no payments)');
    return { ...config, databaseUrl: config.databaseUrl };
  },
  async start(config) {
    const logger = pino({ level: config.logLevel, base: { service: 'lastunit-reconciler' } });
    const db = createDb({ connectionString: config.databaseUrl, max: 4, applicationName: 'lastunit-reconciler', timeouts: config.databaseTimeouts });
    const payments = await wirePayments(config.payments);
    const stop = startReconciler(
      { db, metrics: createMetrics(), processor: payments.processor, capture: config.payments.capture },
      { intervalMs: config.payments.reconcileIntervalMs, onError: (err) => logger.error({ err }, 'reconciler failed; retrying next tick') },
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
