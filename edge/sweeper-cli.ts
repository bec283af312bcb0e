// `npm run worker:sweeper`: only the expiry sweeper and key cleanup, for running them apart from the API.
// Any number may run beside each other and beside API instances (their batches use FOR UPDATE SKIP LOCKED).
import pino from 'pino';
import { loadConfig } from './config.js';
import { openDatabase } from './database.js';
import { createMetrics } from '../orders/metrics.js';
import { startSweeper } from '../orders/sweeper.js';
import { onShutdownSignal } from './shutdown.js';

const config = loadConfig(process.env);
const logger = pino({ level: config.logLevel, base: { service: 'lastunit-sweeper' } });
const metrics = createMetrics();
// Registered before anything starts: a signal during start-up waits for it to finish, then stops cleanly.
let stopAll: (() => Promise<void>) | undefined;
let started: Promise<unknown> | undefined;
onShutdownSignal(async () => {
  await started;
  await stopAll?.();
});
const opening = openDatabase(config, logger, metrics, 2);
started = opening;
const { db, close } = await opening;
const stop = startSweeper(db, metrics, {
  intervalMs: config.sweepIntervalMs,
  onError: (err) => logger.error({ err }, 'sweep failed; retrying next tick'),
});
logger.info({ intervalMs: config.sweepIntervalMs }, 'sweeper running');
stopAll = async () => {
  await stop();
  await close();
};
