// `npm run worker:relay`: the outbox relay alone (set RELAY=off on the API instances to run it only here).
// Needs DATABASE_URL; with REDIS_URL it publishes to Redis pubsub and keeps the availability cache fresh.
import pino from 'pino';
import { loadConfig } from './config.js';
import { createDb } from '../db/pool.js';
import { createMetrics } from '../common/metrics.js';
import { connectRedis } from '../subscriptions/redis.js';
import { createLivePubSub } from '../subscriptions/pubsub.js';
import { createAvailabilityCache } from '../subscriptions/availability-cache.js';
import { startRelay } from '../subscriptions/relay.js';
import { runEntry } from './entry.js';

void runEntry({
  config: (env) =>
    loadConfig(env, (c, problem) => {
      if (!c.database.url) problem('DATABASE_URL', 'required by the relay worker');
    }),
  async start(config) {
    const logger = pino({ level: config.runtime.logLevel, base: { service: 'lastunit-relay' } });
    const metrics = createMetrics();
    const { live } = config;
    const url = config.database.url!; // required above
    const db = createDb({
      connectionString: url,
      max: 2,
      applicationName: 'lastunit-relay',
      timeouts: config.database.timeouts,
    });
    const redis = live.redisUrl ? connectRedis(live.redisUrl, live.redisKeyPrefix, logger, metrics) : undefined;
    if (!redis) logger.warn('no REDIS_URL: events are published in this process only, which no API instance hears');
    const pubsub = createLivePubSub({ redis, prefix: live.redisKeyPrefix });
    const cache = redis
      ? createAvailabilityCache(redis, { ttlSeconds: live.cacheTtlSeconds, metrics, logger })
      : undefined;
    const stop = startRelay({
      db,
      pubsub,
      metrics,
      cache,
      batchSize: live.relayBatchSize,
      leaseMs: live.relayLeaseMs,
      // LISTEN needs a session of its own: never through a transaction pooler (docs/deploy.md)
      listenUrl: config.database.directUrl,
      pollMs: live.relayPollMs,
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
