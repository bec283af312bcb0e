import { serve, type ServerType } from '@hono/node-server';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import pino from 'pino';
import { createDb } from '../db/pool.js';
import { migrate } from '../db/migrate.js';
import { startEmbeddedPostgres, type EmbeddedDb } from '../db/embedded.js';
import { seedProducts } from '../db/catalog-store.js';
import { createMetrics } from '../orders/metrics.js';
import { startSweeper } from '../orders/sweeper.js';
import { Redis } from 'ioredis';
import { createApp } from './app.js';
import { memoryRateLimitStore, rateLimit } from './rate-limit.js';
import { redisRateLimitStore } from './rate-limit-redis.js';
import { generateDemoKeys } from './api-keys.js';
import { ConfigError, type ApiKey, type Config } from './config.js';
import { DEMO_CATALOG } from './demo-catalog.js';

export type NodeHost = { url: string; port: number; keys: ApiKey[]; embedded: boolean; stop: () => Promise<void> };

/** Demo keys survive restarts (under DATA_DIR) so orders stay visible to the same demo client. */
async function demoKeys(dataDir: string): Promise<ApiKey[]> {
  const file = path.join(dataDir, 'demo-keys.json');
  try {
    return JSON.parse(await readFile(file, 'utf8')) as ApiKey[];
  } catch {
    const keys = generateDemoKeys();
    await mkdir(dataDir, { recursive: true });
    await writeFile(file, JSON.stringify(keys, null, 2), { mode: 0o600 });
    return keys;
  }
}

/**
 * The Node host: database (embedded when DATABASE_URL is absent), migrations, HTTP server, sweeper.
 * @example const host = await startNodeHost(loadConfig(process.env))
 */
export async function startNodeHost(config: Config): Promise<NodeHost> {
  const logger = pino({ level: config.logLevel, base: { service: 'lastunit' } });
  if (config.databaseUrl && !config.apiKeys) throw new ConfigError('invalid configuration:\n  API_KEYS: required when DATABASE_URL is set');

  let embedded: EmbeddedDb | undefined;
  let databaseUrl = config.databaseUrl;
  if (!databaseUrl) {
    embedded = await startEmbeddedPostgres({ dir: path.join(config.dataDir, 'pg'), database: 'lastunit', onLog: (l) => logger.trace({ pg: l.trim() }) });
    databaseUrl = embedded.url;
  }
  const metrics = createMetrics();
  const db = createDb({
    connectionString: databaseUrl,
    max: config.databasePoolSize,
    retry: { onRetry: (reason) => metrics.txRetries.inc({ reason }) },
  });
  const applied = await migrate(db);
  if (applied.length) logger.info({ applied }, 'migrations applied');
  if (embedded) {
    const created = await seedProducts(db, DEMO_CATALOG);
    if (created) logger.info({ created }, 'demo catalog seeded');
  }
  const keys = config.apiKeys ?? (await demoKeys(config.dataDir));

  // With REDIS_URL every instance counts a key's requests in the same window; without it, this process does.
  const redis = config.redisUrl ? new Redis(config.redisUrl, { maxRetriesPerRequest: 1 }) : undefined;
  redis?.on('error', (err) => logger.warn({ err }, 'redis unavailable'));
  const { app } = createApp({
    db,
    metrics,
    keys,
    logger,
    graphiql: config.nodeEnv !== 'production',
    production: config.nodeEnv === 'production',
    limits: config.limits,
    rateLimit: rateLimit({
      ...config.rateLimit,
      store: redis ? redisRateLimitStore(redis) : memoryRateLimitStore(),
      onStoreError: (err) => logger.warn({ err }, 'rate limit store failed; request let through'),
    }),
    settings: config,
  });
  const stopSweeper = startSweeper(db, metrics, {
    intervalMs: config.sweepIntervalMs,
    onError: (err) => logger.error({ err }, 'sweeper failed; retrying next tick'),
  });

  const server: ServerType = await new Promise((resolve) => {
    const s = serve({ fetch: app.fetch, port: config.port, hostname: '0.0.0.0' }, () => resolve(s));
  });
  const port = (server.address() as { port: number }).port;
  const url = `http://127.0.0.1:${port}`;

  let stopping: Promise<void> | undefined;
  const stop = () =>
    (stopping ??= (async () => {
      await new Promise<void>((r) => server.close(() => r()));
      await stopSweeper();
      await db.end();
      await redis?.quit().catch(() => {});
      await embedded?.stop();
    })());
  return { url, port, keys, embedded: !!embedded, stop };
}
