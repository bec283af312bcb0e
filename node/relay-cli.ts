// `npm run worker:relay`: the outbox relay alone (set RELAY=off on the API instances to run it only here).
// Needs DATABASE_URL; with REDIS_URL it publishes to Redis pubsub and keeps the availability cache fresh.
import pino from 'pino';
import { ConfigError, loadConfig } from './config.js';
import { createDb } from '../db/pool.js';
import { createMetrics } from '../common/metrics.js';
import { connectRedis } from '../subscriptions/redis.js';
import { createLivePubSub } from '../subscriptions/pubsub.js';
import { createAvailabilityCache } from '../subscriptions/availability-cache.js';
import { startRelay } from '../subscriptions/relay.js';
import { runEntry } from './entry.js';

void runEntry({
  config(env) {
    const config = loadConfig(env);
    if (!config.databaseUrl) throw new ConfigError('invalid configuration:\n  DATABASE_URL: required by the relay worker');
    return { ...config, databaseUrl: config.databaseUrl };
  },
  async start(config) {
    const logger = pino({ level: config.logLevel, base: { service: 'lastunit-relay' } });
    const metrics = createMetrics();
    const db = createDb({ connectionString: config.databaseUrl, max: 2, applicationName: 'lastunit-relay', timeouts: config.databaseTimeouts });
    const redis = config.redisUrl ? connectRedis(config.redisUrl, config.redisKeyPrefix, logger, metrics) : undefined;
    if (!redis) logger.warn('no REDIS_URL: events are published in this process only, which no API instance hears');
    const pubsub = createLivePubSub({ redis, prefix: config.redisKeyPrefix });
    const cache = redis ? createAvailabilityCache(redis, { ttlSeconds: config.cacheTtlSeconds, metrics, logger }) : undefined;
    const stop = startRelay({
      db,
      pubsub,
      metrics,
      cache,
      batchSize: config.relayBatchSize,
      listenUrl: config.databaseUrl,
      pollMs: config.relayPollMs,
      onError: (err) => logger.warn({ err }, 'relay batch failed; retrying'),
    });
    return {
      lines: ['lastunit relay running'],
      stop: async () => {
        await stop();
        await redis?.close();
        await db.end();
      },
    };
  },
});
