// The two Redis connections a Node process opens: one for commands (cache, PUBLISH), one in subscriber mode (pubsub).
import { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { Metrics } from '../common/metrics.js';

export type RedisClients = {
  /** commands (cache reads/writes, PUBLISH): fail fast while Redis is down instead of queueing */
  command: Redis;
  /** SUBSCRIBE only: ioredis re-subscribes every topic by itself after a reconnect */
  subscriber: Redis;
  prefix: string;
  isUp: () => boolean;
  close: () => Promise<void>;
};

/**
 * The two ioredis connections lastunit uses. Redis is never on the path of a sale (I10), so a command never waits
 * long: no offline queue, one retry, a 250 ms command timeout; reconnects forever in the background. Up/down
 * transitions are logged once each and exported as `lastunit_redis_up`.
 * @example const redis = connectRedis(config.redisUrl, 'lastunit:', logger, metrics)
 */
export function connectRedis(url: string, prefix: string, logger: Logger, metrics: Metrics): RedisClients {
  const retryStrategy = (times: number) => Math.min(100 * times, 2000);
  const command = new Redis(url, {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    commandTimeout: 250,
    connectTimeout: 1000,
    retryStrategy,
  });
  // A subscriber's SUBSCRIBE may be queued until Redis is back: that is what a subscription wants.
  const subscriber = new Redis(url, { maxRetriesPerRequest: null, connectTimeout: 1000, retryStrategy });

  let up = false;
  metrics.redisUp.set(0);
  let loggedDown = false;
  command.on('ready', () => {
    up = true;
    loggedDown = false;
    metrics.redisUp.set(1);
    logger.info({ redis: 'up' }, 'redis connected: availability cache and pubsub on Redis');
  });
  const down = (err?: unknown) => {
    up = false;
    metrics.redisUp.set(0);
    if (!loggedDown) {
      loggedDown = true;
      logger.warn(
        { redis: 'down', err },
        'redis unavailable: reads fall back to PostgreSQL, live events wait; retrying',
      );
    }
  };
  command.on('error', down);
  command.on('close', () => down());
  subscriber.on('error', () => {}); // reported through the command connection; ioredis reconnects both

  return {
    command,
    subscriber,
    prefix,
    isUp: () => up,
    close: async () => {
      command.disconnect();
      subscriber.disconnect();
    },
  };
}
