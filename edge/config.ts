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

/** Request limits, shared by both hosts (docs/edge.md has the table). */
const limitsSchema = {
  MAX_BODY_BYTES: int(256, 65_536),
  MAX_DEPTH: int(1, 8),
  MAX_ALIASES: int(0, 15),
  MAX_TOKENS: int(10, 1_000),
  MAX_COST: int(10, 1_000),
};
export type Limits = { maxBodyBytes: number; maxDepth: number; maxAliases: number; maxTokens: number; maxCost: number };
const toLimits = (c: { MAX_BODY_BYTES: number; MAX_DEPTH: number; MAX_ALIASES: number; MAX_TOKENS: number; MAX_COST: number }): Limits => ({
  maxBodyBytes: c.MAX_BODY_BYTES,
  maxDepth: c.MAX_DEPTH,
  maxAliases: c.MAX_ALIASES,
  maxTokens: c.MAX_TOKENS,
  maxCost: c.MAX_COST,
});

const redisUrl = z
  .string()
  .optional()
  .refine((v) => v === undefined || v === '' || /^rediss?:\/\//.test(v), 'must be a redis:// or rediss:// URL')
  .transform((v) => (v ? v : undefined));

const schema = z.object({
  ...limitsSchema,
  REDIS_URL: redisUrl,
  RATE_LIMIT_PER_WINDOW: int(1, 600),
  RATE_LIMIT_WINDOW_SECONDS: int(1, 60),
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
  limits: Limits;
  redisUrl?: string;
  rateLimit: { limit: number; windowSeconds: number };
};

export class ConfigError extends Error {}

/**
 * Reads and validates the whole configuration once; every problem is listed, each naming its variable.
 * @example const config = loadConfig(process.env)
 */
export function loadConfig(env: Record<string, string | undefined>): Config {
  const c = parseOrThrow(schema, env);
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
    limits: toLimits(c),
    redisUrl: c.REDIS_URL,
    rateLimit: { limit: c.RATE_LIMIT_PER_WINDOW, windowSeconds: c.RATE_LIMIT_WINDOW_SECONDS },
  };
}

function parseOrThrow<S extends z.ZodType>(s: S, env: Record<string, unknown>): z.output<S> {
  const parsed = s.safeParse(env);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `  ${i.path.join('.')}: ${i.message}`);
    throw new ConfigError(`invalid configuration:\n${lines.join('\n')}`);
  }
  return parsed.data;
}

const workerSchema = z.object({
  ...limitsSchema,
  NODE_ENV: z.enum(['development', 'production', 'test']).default('production'),
  DATABASE_URL: z.string().regex(/^postgres(ql)?:\/\//, 'must be a postgres:// URL (set it with `wrangler secret put DATABASE_URL`)'),
  API_KEYS: apiKeys.refine((v) => v !== undefined, 'required (set it with `wrangler secret put API_KEYS`)'),
  EDGE_CACHE_TTL_SECONDS: int(0, 2),
  EDGE_CACHE_SWR_SECONDS: int(0, 10),
  HOLD_TTL_SECONDS: int(1, 600),
  IDEMPOTENCY_RETENTION_HOURS: int(1, 24),
  MAX_LINE_QUANTITY: int(1, 100),
  MAX_LINES: int(1, 50),
  NEON_WS_PROXY: z.string().optional(),
});

export type WorkerConfig = {
  nodeEnv: 'development' | 'production' | 'test';
  databaseUrl: string;
  apiKeys: ApiKey[];
  limits: Limits;
  edgeCache: { ttlSeconds: number; staleWhileRevalidateSeconds: number };
  holdTtlSeconds: number;
  idempotencyRetentionHours: number;
  maxLineQuantity: number;
  maxLines: number;
  /** dev/test only: host:port of a plain WebSocket-to-TCP bridge instead of Neon's proxy */
  neonWsProxy?: string;
};

/**
 * The Worker's configuration from its bindings (wrangler.toml [vars] and secrets), validated like loadConfig.
 * @example const config = loadWorkerConfig(env)
 */
export function loadWorkerConfig(env: Record<string, unknown>): WorkerConfig {
  const c = parseOrThrow(workerSchema, env);
  return {
    nodeEnv: c.NODE_ENV,
    databaseUrl: c.DATABASE_URL,
    apiKeys: c.API_KEYS!,
    limits: toLimits(c),
    edgeCache: { ttlSeconds: c.EDGE_CACHE_TTL_SECONDS, staleWhileRevalidateSeconds: c.EDGE_CACHE_SWR_SECONDS },
    holdTtlSeconds: c.HOLD_TTL_SECONDS,
    idempotencyRetentionHours: c.IDEMPOTENCY_RETENTION_HOURS,
    maxLineQuantity: c.MAX_LINE_QUANTITY,
    maxLines: c.MAX_LINES,
    neonWsProxy: c.NEON_WS_PROXY || undefined,
  };
}
