// `npm run worker:sweeper`: only the expiry sweeper and key cleanup, for running them apart from the API.
// Any number may run beside each other and beside API instances (their batches use FOR UPDATE SKIP LOCKED).
import pino from 'pino';
import { loadConfig } from './config.js';
import { openDatabase } from './database.js';
import { createMetrics } from '../orders/metrics.js';
import { startSweeper } from '../orders/sweeper.js';

const config = loadConfig(process.env);
const logger = pino({ level: config.logLevel, base: { service: 'lastunit-sweeper' } });
const metrics = createMetrics();
const { db, close } = await openDatabase(config, logger, metrics, 2);
const stop = startSweeper(db, metrics, {
  intervalMs: config.sweepIntervalMs,
  onError: (err) => logger.error({ err }, 'sweep failed; retrying next tick'),
});
logger.info({ intervalMs: config.sweepIntervalMs }, 'sweeper running');
// process.on, not once: tsx's own signal hook exits with 128+signal when it finds no other listener left.
let stopping = false;
for (const sig of ['SIGINT', 'SIGTERM'] as const)
  process.on(sig, async () => {
    if (stopping) return;
    stopping = true;
    await stop();
    await close();
    process.exit(0);
  });
