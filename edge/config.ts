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

/** The dev-only webhook secret of the embedded default (in-process sandbox); never use it with real money. */
export const DEV_WEBHOOK_SECRET = 'whsec_lastunit_dev_only_not_secret';

const httpUrl = z
  .string()
  .optional()
  .refine((v) => v === undefined || v === '' || /^https?:\/\/[^\s]+$/.test(v), 'must be an http(s):// URL')
  .transform((v) => (v ? v.replace(/\/+$/, '') : undefined));
const optionalText = z
  .string()
  .optional()
  .transform((v) => (v ? v : undefined));

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
  REDIS_KEY_PREFIX: z.string().regex(/^[A-Za-z0-9:_.-]{1,64}$/, 'must be 1-64 letters, digits, colon, dot, dash or underscore').default('lastunit:'),
  CACHE_TTL_SECONDS: int(1, 5),
  RELAY: z.enum(['on', 'off']).default('on'),
  RELAY_POLL_MS: int(50, 500),
  RELAY_BATCH_SIZE: int(1, 200),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  PAYMENT_PROVIDER: z.enum(['sandbox', 'stripe']).default('sandbox'),
  SANDBOX_PAYMENTS_URL: httpUrl,
  PAYMENT_TIMEOUT_MS: int(1, 5000),
  PAYMENT_DEADLINE_SECONDS: int(1, 60),
  PAYMENT_WEBHOOK_SECRET: optionalText,
  WEBHOOK_TOLERANCE_SECONDS: int(1, 300),
  RECONCILE_INTERVAL_MS: int(10, 1000),
  STRIPE_SECRET_KEY: optionalText,
  STRIPE_WEBHOOK_SECRET: optionalText,
  // test-only fault injection: sleep this long between the hold and the authorization (0 = never)
  LASTUNIT_FAULT_PAUSE_BEFORE_AUTHORIZE_MS: int(0, 0),
}).superRefine((c, ctx) => {
  const need = (name: string, why: string) => ctx.addIssue({ code: 'custom', path: [name], message: `required ${why}` });
  if (c.PAYMENT_PROVIDER === 'stripe') {
    if (!c.STRIPE_SECRET_KEY) need('STRIPE_SECRET_KEY', 'when PAYMENT_PROVIDER=stripe');
    if (!c.STRIPE_WEBHOOK_SECRET) need('STRIPE_WEBHOOK_SECRET', 'when PAYMENT_PROVIDER=stripe');
  }
  // a separately run sandbox must share the webhook secret explicitly; the in-process one may use the dev secret
  if (c.PAYMENT_PROVIDER === 'sandbox' && c.SANDBOX_PAYMENTS_URL && !c.PAYMENT_WEBHOOK_SECRET)
    need('PAYMENT_WEBHOOK_SECRET', 'when SANDBOX_PAYMENTS_URL is set');
});

/** Settings of the standalone sandbox processor (`npm run sandbox:payments`). */
const sandboxSchema = z.object({
  SANDBOX_PORT: int(0, 4100),
  SANDBOX_WEBHOOK_URL: httpUrl,
  PAYMENT_WEBHOOK_SECRET: z.string().default(DEV_WEBHOOK_SECRET),
  SANDBOX_HANG_MS: int(0, 10_000),
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
  payments: PaymentsConfig;
  /** with it: Redis pubsub across instances and the Redis availability cache; without: in-process pubsub, no cache */
  redisUrl?: string;
  /** prefixes every Redis key and channel, so several deployments (or test files) share one Redis */
  redisKeyPrefix: string;
  cacheTtlSeconds: number;
  /** run the outbox relay in this process (`off` when it runs alone: `npm run worker:relay`) */
  relay: boolean;
  relayPollMs: number;
  relayBatchSize: number;
  limits: Limits;
  rateLimit: { limit: number; windowSeconds: number };
};

export type PaymentsConfig = {
  provider: 'sandbox' | 'stripe';
  /** absent: the Node host starts the sandbox in-process */
  sandboxUrl?: string;
  timeoutMs: number;
  deadlineSeconds: number;
  webhookSecret: string;
  webhookToleranceSeconds: number;
  reconcileIntervalMs: number;
  stripeSecretKey?: string;
  stripeWebhookSecret?: string;
  /** test-only fault injection, see LASTUNIT_FAULT_PAUSE_BEFORE_AUTHORIZE_MS */
  faultPauseBeforeAuthorizeMs: number;
};
export type SandboxConfig = { port: number; webhookUrl?: string; webhookSecret: string; hangMs: number };

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
    payments: {
      provider: c.PAYMENT_PROVIDER,
      sandboxUrl: c.SANDBOX_PAYMENTS_URL,
      timeoutMs: c.PAYMENT_TIMEOUT_MS,
      deadlineSeconds: c.PAYMENT_DEADLINE_SECONDS,
      webhookSecret: c.PAYMENT_PROVIDER === 'stripe' ? c.STRIPE_WEBHOOK_SECRET! : (c.PAYMENT_WEBHOOK_SECRET ?? DEV_WEBHOOK_SECRET),
      webhookToleranceSeconds: c.WEBHOOK_TOLERANCE_SECONDS,
      reconcileIntervalMs: c.RECONCILE_INTERVAL_MS,
      stripeSecretKey: c.STRIPE_SECRET_KEY,
      stripeWebhookSecret: c.STRIPE_WEBHOOK_SECRET,
      faultPauseBeforeAuthorizeMs: c.LASTUNIT_FAULT_PAUSE_BEFORE_AUTHORIZE_MS,
    },
    redisUrl: c.REDIS_URL,
    redisKeyPrefix: c.REDIS_KEY_PREFIX,
    cacheTtlSeconds: c.CACHE_TTL_SECONDS,
    relay: c.RELAY === 'on',
    relayPollMs: c.RELAY_POLL_MS,
    relayBatchSize: c.RELAY_BATCH_SIZE,
    limits: toLimits(c),
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

/**
 * The standalone sandbox's settings, validated like the rest.
 * @example const sandbox = await startSandbox(loadSandboxConfig(process.env))
 */
export function loadSandboxConfig(env: Record<string, string | undefined>): SandboxConfig {
  const c = parseOrThrow(sandboxSchema, env);
  return { port: c.SANDBOX_PORT, webhookUrl: c.SANDBOX_WEBHOOK_URL, webhookSecret: c.PAYMENT_WEBHOOK_SECRET, hangMs: c.SANDBOX_HANG_MS };
}

