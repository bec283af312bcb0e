// The Node host's configuration (npm start and every command-line entry): read and validated once per process.
import { z } from 'zod';
import type { ApiKey } from '../common/caller.js';
import {
  ConfigError,
  apiKeys,
  databaseTimeoutFields,
  holdLimitFields,
  int,
  limitsFields,
  parseOrThrow,
  shortKeyProblems,
  toDatabaseTimeouts,
  toLimits,
  type DatabaseTimeouts,
  type Limits,
} from '../common/config-fields.js';
import { toTrafficConfig, trafficFields, type TrafficConfig } from './traffic-config.js';

export { ConfigError };

/**
 * The dev-only webhook secret of the embedded default (in-process sandbox): used only with NODE_ENV=development or
 * test; a production start refuses it (and refuses to start without a secret of its own).
 */
export const DEV_WEBHOOK_SECRET = 'whsec_lastunit_dev_only_not_secret';

/** Secrets that are published (in this repository's source or docs): a production start refuses them. */
const DEV_SECRETS = new Set([DEV_WEBHOOK_SECRET]);

/** 127.0.0.1, ::1 or localhost: only this machine can reach it. */
export const isLoopbackHost = (host: string) => /^(localhost|127(\.\d{1,3}){3}|::1|\[::1\])$/.test(host);

const httpUrl = z
  .string()
  .optional()
  .refine((v) => v === undefined || v === '' || /^https?:\/\/[^\s]+$/.test(v), 'must be an http(s):// URL')
  .transform((v) => (v ? v.replace(/\/+$/, '') : undefined));
const optionalText = z
  .string()
  .optional()
  .transform((v) => (v ? v : undefined));

const redisUrl = z
  .string()
  .optional()
  .refine((v) => v === undefined || v === '' || /^rediss?:\/\//.test(v), 'must be a redis:// or rediss:// URL')
  .transform((v) => (v ? v : undefined));

const schema = z.object({
  ...limitsFields,
  ...trafficFields,
  ...holdLimitFields,
  ...databaseTimeoutFields,
  REDIS_URL: redisUrl,
  NODE_ENV: z.enum(['development', 'production', 'test']).default('development'),
  PORT: int(0, 4000),
  // absent: 127.0.0.1 in development and test, 0.0.0.0 in production
  HOST: optionalText,
  // when set, GET /metrics needs `Authorization: Bearer <METRICS_TOKEN>`
  METRICS_TOKEN: optionalText,
  // processed payment events are kept at least this long (a processor may redeliver an event for days)
  PROCESSED_EVENTS_RETENTION_DAYS: int(30, 30),
  // published outbox rows are kept this long (for debugging; nothing reads them again)
  OUTBOX_RETENTION_HOURS: int(0, 24),
  // how often the retention jobs (keys, outbox, processed events) run
  RETENTION_INTERVAL_MS: int(10, 60_000),
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
  CLAIM_BATCHING: z.enum(['on', 'off']).default('on'),
  CLAIM_BATCHES_IN_FLIGHT: int(1, 1),
  RELAY_POLL_MS: int(50, 500),
  RELAY_BATCH_SIZE: int(1, 200),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  // absent: sandbox in development and test; production requires it
  PAYMENT_PROVIDER: z.preprocess((v) => (v === '' ? undefined : v), z.enum(['sandbox', 'stripe']).optional()),
  // production only takes sandbox "payments" (no money moves) when this says so explicitly
  ALLOW_SANDBOX_PAYMENTS: z.preprocess((v) => (v === '' ? undefined : v), z.enum(['true', 'false']).default('false')),
  SANDBOX_PAYMENTS_URL: httpUrl,
  PAYMENT_TIMEOUT_MS: int(1, 5000),
  PAYMENT_DEADLINE_SECONDS: int(1, 60),
  PAYMENT_MAX_PENDING_SECONDS: int(1, 3600),
  PAYMENT_ACTION_TIMEOUT_SECONDS: int(1, 900),
  PAYMENT_CAPTURE: z.enum(['on_confirm', 'manual']).default('on_confirm'),
  PAYMENT_WEBHOOK_SECRET: optionalText,
  WEBHOOK_TOLERANCE_SECONDS: int(1, 300),
  WEBHOOK_MAX_BODY_BYTES: int(1024, 262_144),
  RECONCILE_INTERVAL_MS: int(10, 1000),
  STRIPE_SECRET_KEY: optionalText,
  STRIPE_WEBHOOK_SECRET: optionalText,
  // marketplace channels (docs/channels.md): the pusher in this process, its fallback poll, each marketplace call's timeout
  CHANNEL_PUSHER: z.enum(['on', 'off']).default('on'),
  CHANNEL_PUSH_POLL_MS: int(20, 500),
  CHANNEL_PUSH_TIMEOUT_MS: int(1, 5000),
  SHOPIFY_ACCESS_TOKEN: optionalText,
  // the marketplace sandbox in this process with a demo SANDBOX channel pointing at it (docs/channels.md); absent:
  // in-process with NODE_ENV=development, off otherwise; refused with NODE_ENV=production
  MARKETPLACE_SANDBOX: z.preprocess((v) => (v === '' ? undefined : v), z.enum(['in-process', 'off']).optional()),
  // test-only fault injection: sleep this long between the hold and the authorization (0 = never)
  LASTUNIT_FAULT_PAUSE_BEFORE_AUTHORIZE_MS: int(0, 0),
}).superRefine((c, ctx) => {
  const need = (name: string, why: string) => ctx.addIssue({ code: 'custom', path: [name], message: `required ${why}` });
  if (c.PAYMENT_PROVIDER === 'stripe') {
    if (!c.STRIPE_SECRET_KEY) need('STRIPE_SECRET_KEY', 'when PAYMENT_PROVIDER=stripe');
    if (!c.STRIPE_WEBHOOK_SECRET) need('STRIPE_WEBHOOK_SECRET', 'when PAYMENT_PROVIDER=stripe');
  }
  // a separately run sandbox must share the webhook secret explicitly; the in-process one may use the dev secret
  if (c.PAYMENT_PROVIDER !== 'stripe' && c.SANDBOX_PAYMENTS_URL && !c.PAYMENT_WEBHOOK_SECRET)
    need('PAYMENT_WEBHOOK_SECRET', 'when SANDBOX_PAYMENTS_URL is set');
  if (c.NODE_ENV === 'production' && c.LASTUNIT_TEST_DIAGNOSTICS === 'on')
    ctx.addIssue({ code: 'custom', path: ['LASTUNIT_TEST_DIAGNOSTICS'], message: 'test-only: refused with NODE_ENV=production' });
  if (c.NODE_ENV === 'production') productionProblems(c, (name, message) => ctx.addIssue({ code: 'custom', path: [name], message }));
});

/**
 * The production profile (NODE_ENV=production): settings that would take fake money, trust a published secret or
 * expose an unprotected entry point refuse the start. Messages name the variable and never quote its value.
 */
function productionProblems(
  c: {
    PAYMENT_PROVIDER?: 'sandbox' | 'stripe';
    ALLOW_SANDBOX_PAYMENTS: 'true' | 'false';
    PAYMENT_WEBHOOK_SECRET?: string;
    STRIPE_WEBHOOK_SECRET?: string;
    API_KEYS?: ApiKey[];
    HOST?: string;
    METRICS_TOKEN?: string;
    MARKETPLACE_SANDBOX?: 'in-process' | 'off';
  },
  problem: (name: string, message: string) => void,
) {
  if (!c.PAYMENT_PROVIDER) problem('PAYMENT_PROVIDER', 'required with NODE_ENV=production (stripe, or sandbox with ALLOW_SANDBOX_PAYMENTS=true)');
  if (c.PAYMENT_PROVIDER === 'sandbox' && c.ALLOW_SANDBOX_PAYMENTS !== 'true')
    problem('PAYMENT_PROVIDER', 'sandbox takes no money: refused with NODE_ENV=production unless ALLOW_SANDBOX_PAYMENTS=true');
  if (c.PAYMENT_PROVIDER === 'sandbox' && !c.PAYMENT_WEBHOOK_SECRET)
    problem('PAYMENT_WEBHOOK_SECRET', 'required with NODE_ENV=production and PAYMENT_PROVIDER=sandbox (the development secret is public)');
  for (const name of ['PAYMENT_WEBHOOK_SECRET', 'STRIPE_WEBHOOK_SECRET'] as const) {
    const v = c[name];
    if (v && DEV_SECRETS.has(v)) problem(name, 'is the published development secret: refused with NODE_ENV=production');
  }
  if (c.MARKETPLACE_SANDBOX === 'in-process')
    problem('MARKETPLACE_SANDBOX', 'in-process is a fake marketplace with a demo channel: refused with NODE_ENV=production');
  for (const p of shortKeyProblems(c.API_KEYS)) problem('API_KEYS', p);
  const host = c.HOST ?? '0.0.0.0';
  if (!c.METRICS_TOKEN && !isLoopbackHost(host))
    problem('METRICS_TOKEN', `required with NODE_ENV=production when HOST is not loopback (/metrics would be open on ${host})`);
}

/** Settings of the standalone sandbox processor (`npm run sandbox:payments`). */
const sandboxSchema = z
  .object({
    NODE_ENV: z.enum(['development', 'production', 'test']).default('development'),
    SANDBOX_PORT: int(0, 4100),
    SANDBOX_WEBHOOK_URL: httpUrl,
    // absent: the development secret, in development and test only
    PAYMENT_WEBHOOK_SECRET: optionalText,
    SANDBOX_HANG_MS: int(0, 10_000),
  })
  .superRefine((c, ctx) => {
    if (c.NODE_ENV !== 'production') return;
    if (!c.PAYMENT_WEBHOOK_SECRET)
      ctx.addIssue({ code: 'custom', path: ['PAYMENT_WEBHOOK_SECRET'], message: 'required with NODE_ENV=production (the development secret is public)' });
    else if (DEV_SECRETS.has(c.PAYMENT_WEBHOOK_SECRET))
      ctx.addIssue({ code: 'custom', path: ['PAYMENT_WEBHOOK_SECRET'], message: 'is the published development secret: refused with NODE_ENV=production' });
  });

export type Config = {
  nodeEnv: 'development' | 'production' | 'test';
  port: number;
  /** the listen address (HOST): 127.0.0.1 by default in development and test, 0.0.0.0 in production */
  host: string;
  /** when set, GET /metrics needs it as a bearer token */
  metricsToken?: string;
  databaseUrl?: string;
  databasePoolSize: number;
  databaseTimeouts: DatabaseTimeouts;
  /** the retention jobs: how often, and what they keep (processed events: at least 30 days) */
  retention: { intervalMs: number; outboxHours: number; processedEventsDays: number };
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
  /** active holds per buyer (I14); 0: no limit */
  maxActiveHolds: number;
  /** coalesce concurrent single-line claims of one SKU into one transaction (CLAIM_BATCHING, default on) */
  claimBatching: boolean;
  /** batches of one SKU in flight at once (CLAIM_BATCHES_IN_FLIGHT) */
  claimBatchesInFlight: number;
  channels: ChannelsConfig;
} & TrafficConfig;

export type ChannelsConfig = {
  /** run the marketplace pusher in this process */
  pusher: boolean;
  pollMs: number;
  timeoutMs: number;
  /** the Admin API token SHOPIFY channels are called with */
  shopifyAccessToken?: string;
  webhookToleranceSeconds: number;
  /** start the marketplace sandbox in this process, with the demo channel pointing at it (MARKETPLACE_SANDBOX) */
  marketplaceSandbox: boolean;
};

export type PaymentsConfig = {
  provider: 'sandbox' | 'stripe';
  /** absent: the Node host starts the sandbox in-process */
  sandboxUrl?: string;
  timeoutMs: number;
  deadlineSeconds: number;
  /** past this an undecided payment is cancelled at the processor, then released */
  maxPendingSeconds: number;
  /** the same bound while the shopper is asked to act (3-D Secure) */
  actionTimeoutSeconds: number;
  /** on_confirm: capture every confirmed payment; manual: an admin captureOrder does */
  capture: 'on_confirm' | 'manual';
  webhookSecret: string;
  webhookToleranceSeconds: number;
  /** larger webhook bodies are refused with 413 while they stream */
  webhookMaxBodyBytes: number;
  reconcileIntervalMs: number;
  stripeSecretKey?: string;
  stripeWebhookSecret?: string;
  /** test-only fault injection, see LASTUNIT_FAULT_PAUSE_BEFORE_AUTHORIZE_MS */
  faultPauseBeforeAuthorizeMs: number;
};
export type SandboxConfig = { port: number; webhookUrl?: string; webhookSecret: string; hangMs: number };

/**
 * Reads and validates the whole configuration once; every problem is listed, each naming its variable.
 * @example const config = loadConfig(process.env)
 */
export function loadConfig(env: Record<string, string | undefined>): Config {
  const c = parseOrThrow(schema, env);
  return {
    nodeEnv: c.NODE_ENV,
    port: c.PORT,
    host: c.HOST ?? (c.NODE_ENV === 'production' ? '0.0.0.0' : '127.0.0.1'),
    metricsToken: c.METRICS_TOKEN,
    databaseUrl: c.DATABASE_URL,
    databasePoolSize: c.DATABASE_POOL_SIZE,
    databaseTimeouts: toDatabaseTimeouts(c),
    retention: { intervalMs: c.RETENTION_INTERVAL_MS, outboxHours: c.OUTBOX_RETENTION_HOURS, processedEventsDays: c.PROCESSED_EVENTS_RETENTION_DAYS },
    dataDir: c.DATA_DIR,
    apiKeys: c.API_KEYS,
    holdTtlSeconds: c.HOLD_TTL_SECONDS,
    sweepIntervalMs: c.SWEEP_INTERVAL_MS,
    idempotencyRetentionHours: c.IDEMPOTENCY_RETENTION_HOURS,
    maxLineQuantity: c.MAX_LINE_QUANTITY,
    maxLines: c.MAX_LINES,
    logLevel: c.LOG_LEVEL,
    payments: {
      provider: c.PAYMENT_PROVIDER ?? 'sandbox',
      sandboxUrl: c.SANDBOX_PAYMENTS_URL,
      timeoutMs: c.PAYMENT_TIMEOUT_MS,
      deadlineSeconds: c.PAYMENT_DEADLINE_SECONDS,
      maxPendingSeconds: c.PAYMENT_MAX_PENDING_SECONDS,
      actionTimeoutSeconds: c.PAYMENT_ACTION_TIMEOUT_SECONDS,
      capture: c.PAYMENT_CAPTURE,
      // the development secret only outside production (a production start without a secret of its own is refused above)
      webhookSecret: c.PAYMENT_PROVIDER === 'stripe' ? c.STRIPE_WEBHOOK_SECRET! : (c.PAYMENT_WEBHOOK_SECRET ?? (c.NODE_ENV === 'production' ? '' : DEV_WEBHOOK_SECRET)),
      webhookToleranceSeconds: c.WEBHOOK_TOLERANCE_SECONDS,
      webhookMaxBodyBytes: c.WEBHOOK_MAX_BODY_BYTES,
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
    maxActiveHolds: c.MAX_ACTIVE_HOLDS,
    claimBatching: c.CLAIM_BATCHING === 'on',
    claimBatchesInFlight: c.CLAIM_BATCHES_IN_FLIGHT,
    channels: {
      pusher: c.CHANNEL_PUSHER === 'on',
      pollMs: c.CHANNEL_PUSH_POLL_MS,
      timeoutMs: c.CHANNEL_PUSH_TIMEOUT_MS,
      shopifyAccessToken: c.SHOPIFY_ACCESS_TOKEN,
      webhookToleranceSeconds: c.WEBHOOK_TOLERANCE_SECONDS,
      marketplaceSandbox: (c.MARKETPLACE_SANDBOX ?? (c.NODE_ENV === 'development' ? 'in-process' : 'off')) === 'in-process',
    },
    ...toTrafficConfig(c),
  };
}

/**
 * The standalone sandbox's settings, validated like the rest.
 * @example const sandbox = await startSandbox(loadSandboxConfig(process.env))
 */
export function loadSandboxConfig(env: Record<string, string | undefined>): SandboxConfig {
  const c = parseOrThrow(sandboxSchema, env);
  return { port: c.SANDBOX_PORT, webhookUrl: c.SANDBOX_WEBHOOK_URL, webhookSecret: c.PAYMENT_WEBHOOK_SECRET ?? DEV_WEBHOOK_SECRET, hangMs: c.SANDBOX_HANG_MS };
}


/** What `npm run partner:publish` needs (node/partner-publish-cli.ts). */
export type PublishConfig = { url: string; adminKey: string; app: string; version: string; manifestPath: string };

const LOOPBACK = /^(localhost|127(\.\d{1,3}){3}|\[::1\])$/;
const publishSchema = z.object({
  LASTUNIT_URL: z
    .string({ error: 'required: the API to publish to, e.g. https://api.example.com/graphql' })
    .refine((v) => {
      try {
        const u = new URL(v);
        // the admin key must not cross a network in clear text: plain http only to this machine
        return u.protocol === 'https:' || (u.protocol === 'http:' && LOOPBACK.test(u.hostname));
      } catch {
        return false;
      }
    }, 'must be an https:// URL (http:// only for localhost)'),
  LASTUNIT_ADMIN_KEY: z.string({ error: 'required: an admin API key of that server' }).min(8, 'must have 8+ characters'),
  app: z.string({ error: 'required: --app <name>, the client name of the partner keys' }),
  version: z.string({ error: 'required: --version <version>' }),
  manifest: z.string({ error: 'required: the manifest file, e.g. persisted-query-manifest.json' }),
});

/**
 * The publish CLI's settings: LASTUNIT_URL and LASTUNIT_ADMIN_KEY from the environment, `--app`, `--version` and the
 * manifest path from the command line; every problem listed at once.
 * @example loadPublishConfig(process.env, ['--app', 'acme', '--version', '1.0.0', 'persisted-query-manifest.json'])
 */
export function loadPublishConfig(env: Record<string, string | undefined>, argv: string[]): PublishConfig {
  const args: Record<string, string | undefined> = {};
  const extra: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    const flag = /^--(app|version)(?:=(.*))?$/.exec(a);
    if (flag) args[flag[1]!] = flag[2] ?? argv[++i];
    else if (a.startsWith('-') || args.manifest !== undefined) extra.push(a);
    else args.manifest = a;
  }
  if (extra.length) throw new ConfigError(`invalid arguments:\n  unexpected ${extra.join(' ')} (usage: --app <name> --version <v> <manifest.json>)`);
  const c = parseOrThrow(publishSchema, { LASTUNIT_URL: env.LASTUNIT_URL || undefined, LASTUNIT_ADMIN_KEY: env.LASTUNIT_ADMIN_KEY || undefined, ...args });
  const url = new URL(c.LASTUNIT_URL);
  if (url.pathname === '/') url.pathname = '/graphql'; // a bare origin means its /graphql
  return { url: url.toString(), adminKey: c.LASTUNIT_ADMIN_KEY, app: c.app, version: c.version, manifestPath: c.manifest };
}
