import { z } from 'zod';

/** Roles an API key can carry (ARCHITECTURE.md section 4). */
export const ROLES = ['storefront', 'partner', 'admin'] as const;
export type Role = (typeof ROLES)[number];
export type ApiKey = { role: Role; key: string };

const int = (min: number, def: number) =>
  z
    .string()
    .optional()
    .transform((v, ctx) => {
      if (v === undefined || v === '') return def;
      if (!/^\d+$/.test(v.trim())) {
        ctx.addIssue({ code: 'custom', message: `must be an integer >= ${min}, got "${v}"` });
        return z.NEVER;
      }
      const n = Number(v);
      if (n < min) {
        ctx.addIssue({ code: 'custom', message: `must be an integer >= ${min}, got "${v}"` });
        return z.NEVER;
      }
      return n;
    });

const apiKeys = z
  .string()
  .optional()
  .transform((v, ctx): ApiKey[] | undefined => {
    if (v === undefined || v.trim() === '') return undefined;
    const out: ApiKey[] = [];
    for (const part of v.split(',').map((s) => s.trim()).filter(Boolean)) {
      const i = part.indexOf(':');
      const role = part.slice(0, i) as Role;
      const key = part.slice(i + 1);
      if (i < 1 || !ROLES.includes(role) || key.length < 8) {
        ctx.addIssue({
          code: 'custom',
          message: `entries must be role:key with role one of ${ROLES.join('/')} and a key of 8+ characters, got "${part}"`,
        });
        return z.NEVER;
      }
      out.push({ role, key });
    }
    return out;
  });

const schema = z.object({
  NODE_ENV: z.enum(['development', 'production', 'test']).default('development'),
  PORT: int(0, 4000),
  DATABASE_URL: z
    .string()
    .optional()
    .refine((v) => v === undefined || v === '' || /^postgres(ql)?:\/\//.test(v), 'must be a postgres:// URL')
    .transform((v) => (v ? v : undefined)),
  DATABASE_POOL_SIZE: int(1, 20),
  DATA_DIR: z.string().default('.data'),
  API_KEYS: apiKeys,
  HOLD_TTL_SECONDS: int(1, 600),
  SWEEP_INTERVAL_MS: int(10, 1000),
  IDEMPOTENCY_RETENTION_HOURS: int(1, 24),
  MAX_LINE_QUANTITY: int(1, 100),
  MAX_LINES: int(1, 50),
  REDIS_URL: z
    .string()
    .optional()
    .refine((v) => v === undefined || v === '' || /^rediss?:\/\//.test(v), 'must be a redis:// or rediss:// URL')
    .transform((v) => (v ? v : undefined)),
  REDIS_KEY_PREFIX: z.string().regex(/^[A-Za-z0-9:_.-]{1,64}$/, 'must be 1-64 letters, digits, colon, dot, dash or underscore').default('lastunit:'),
  CACHE_TTL_SECONDS: int(1, 5),
  RELAY: z.enum(['on', 'off']).default('on'),
  RELAY_POLL_MS: int(50, 500),
  RELAY_BATCH_SIZE: int(1, 200),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
});

export type Config = {
  nodeEnv: 'development' | 'production' | 'test';
  port: number;
  databaseUrl?: string;
  databasePoolSize: number;
  dataDir: string;
  apiKeys?: ApiKey[];
  holdTtlSeconds: number;
  sweepIntervalMs: number;
  idempotencyRetentionHours: number;
  maxLineQuantity: number;
  maxLines: number;
  logLevel: string;
  /** with it: Redis pubsub across instances and the Redis availability cache; without: in-process pubsub, no cache */
  redisUrl?: string;
  /** prefixes every Redis key and channel, so several deployments (or test files) share one Redis */
  redisKeyPrefix: string;
  cacheTtlSeconds: number;
  /** run the outbox relay in this process (`off` when it runs alone: `npm run worker:relay`) */
  relay: boolean;
  relayPollMs: number;
  relayBatchSize: number;
};

export class ConfigError extends Error {}

/**
 * Reads and validates the whole configuration once; every problem is listed, each naming its variable.
 * @example const config = loadConfig(process.env)
 */
export function loadConfig(env: Record<string, string | undefined>): Config {
  const parsed = schema.safeParse(env);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `  ${i.path.join('.')}: ${i.message}`);
    throw new ConfigError(`invalid configuration:\n${lines.join('\n')}`);
  }
  const c = parsed.data;
  return {
    nodeEnv: c.NODE_ENV,
    port: c.PORT,
    databaseUrl: c.DATABASE_URL,
    databasePoolSize: c.DATABASE_POOL_SIZE,
    dataDir: c.DATA_DIR,
    apiKeys: c.API_KEYS,
    holdTtlSeconds: c.HOLD_TTL_SECONDS,
    sweepIntervalMs: c.SWEEP_INTERVAL_MS,
    idempotencyRetentionHours: c.IDEMPOTENCY_RETENTION_HOURS,
    maxLineQuantity: c.MAX_LINE_QUANTITY,
    maxLines: c.MAX_LINES,
    logLevel: c.LOG_LEVEL,
    redisUrl: c.REDIS_URL,
    redisKeyPrefix: c.REDIS_KEY_PREFIX,
    cacheTtlSeconds: c.CACHE_TTL_SECONDS,
    relay: c.RELAY === 'on',
    relayPollMs: c.RELAY_POLL_MS,
    relayBatchSize: c.RELAY_BATCH_SIZE,
  };
}
