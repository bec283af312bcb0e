// `npm run worker:sweeper`: only the expiry sweeper and key cleanup, for running them apart from the API.
// Any number may run beside each other and beside API instances (their batches use FOR UPDATE SKIP LOCKED).
import pino from 'pino';
import { loadConfig } from './config.js';
import { openDatabase } from './database.js';
import { createMetrics } from '../common/metrics.js';
import { startSweeper } from '../orders/sweeper.js';
import { runEntry } from './entry.js';

void runEntry({
  config: loadConfig,
  async start(config) {
    const logger = pino({ level: config.runtime.logLevel, base: { service: 'lastunit-sweeper' } });
    const metrics = createMetrics();
    const { db, close } = await openDatabase(config.database, logger, metrics, 2);
    const stop = startSweeper(db, metrics, {
      ...config.sweeper,
      onError: (err) => logger.error({ err }, 'sweep failed; retrying next tick'),
    });
    logger.info({ intervalMs: config.sweeper.intervalMs }, 'sweeper running');
    return {
      stop: async () => {
        await stop();
        await close();
      },
    };
  },
});
