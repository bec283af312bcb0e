import { Redis } from 'ioredis';
import { randomBytes } from 'node:crypto';

export const REDIS_URL = process.env.REDIS_URL || 'redis://127.0.0.1:6379';
/** A Redis port nothing listens on: the "Redis is down" cases point here instead of stopping the shared Redis. */
export const DEAD_REDIS_URL = 'redis://127.0.0.1:1';

/**
 * Whether Redis answers at REDIS_URL. In CI (CI=true) a missing Redis is a failure, not a skip: the suites that need it
 * must run there.
 * @example const hasRedis = await redisAvailable(); describe.skipIf(!hasRedis)(...)
 */
export async function redisAvailable(url = REDIS_URL, ci = process.env.CI === 'true'): Promise<boolean> {
  const r = new Redis(url, {
    lazyConnect: true,
    connectTimeout: 1000,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
  });
  r.on('error', () => {});
  try {
    await r.connect();
    await r.ping();
    return true;
  } catch (err) {
    if (ci) throw new Error(`Redis is required in CI but ${url} does not answer: ${String(err)}`);
    console.warn(`Redis not available at ${url}: skipping the suites that need it (they fail instead when CI=true)`);
    return false;
  } finally {
    r.disconnect();
  }
}

/** A key/channel prefix of this test file's own, so files sharing one Redis never hear each other. */
export const uniquePrefix = (name: string) => `lu_t_${name}_${randomBytes(4).toString('hex')}:`;
