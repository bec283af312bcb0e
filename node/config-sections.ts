// The Node host's configuration sections, one per concern: each setting's variable, parser and default written once,
// the checks that concern only that section beside it, the types inferred. node/config.ts reads them all.
import { z } from 'zod';
import { apiKeys, httpUrl, int, onOff, oneOf, postgresUrl, redisUrl, setting, text } from '../common/config-fields.js';
import { databaseTimeoutSettings, shortKeyProblems } from '../common/config-sections.js';
import type { RoleLimits } from '../app/rate-limit.js';

/**
 * The dev-only webhook secret of the embedded default (in-process sandbox): used only with NODE_ENV=development or
 * test; a production start refuses it (and refuses to start without a secret of its own).
 */
export const DEV_WEBHOOK_SECRET = 'whsec_lastunit_dev_only_not_secret';

/** Secrets that are published (in this repository's source or docs): a production start refuses them. */
const DEV_SECRETS = new Set([DEV_WEBHOOK_SECRET]);

/** 127.0.0.1, ::1 or localhost: only this machine can reach it. */
export const isLoopbackHost = (host: string) => /^(localhost|127(\.\d{1,3}){3}|::1|\[::1\])$/.test(host);

/** A check's problem, on the field it is about (the reader names that field's variable). */
const refuse = (ctx: z.RefinementCtx, field: string, message: string) =>
  ctx.addIssue({ code: 'custom', path: [field], message });

/** Which profile this process runs: `production` turns GraphiQL and introspection off and applies the checks below. */
export const runtimeSettings = z.object({
  nodeEnv: setting('NODE_ENV', oneOf(['development', 'production', 'test'], 'development')),
  logLevel: setting('LOG_LEVEL', oneOf(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'], 'info')),
});
export type Runtime = z.infer<typeof runtimeSettings>;
const production = (r: Runtime) => r.nodeEnv === 'production';

export const httpSettings = (runtime: Runtime) =>
  z
    .object({
      /** 0 picks a free port */
      port: setting('PORT', int(0, 4000)),
      /** the listen address: this machine only in development and test, every address in production */
      host: setting('HOST', z.string().default(production(runtime) ? '0.0.0.0' : '127.0.0.1')),
      /** when set, GET /metrics needs `Authorization: Bearer <METRICS_TOKEN>` */
      metricsToken: setting('METRICS_TOKEN', text),
      /** proxies in front of this host whose X-Forwarded-For is believed (0: the connection's address is the client) */
      trustProxy: setting('TRUST_PROXY', int(0, 0)),
      /**
       * Node host processes serving this port (node:cluster, one pool, batcher and relay each). Absent: one per
       * available core in production with DATABASE_URL and REDIS_URL, 1 otherwise (node/config.ts); the embedded
       * database and the in-process marketplace sandbox need 1, production more than 1 needs REDIS_URL
       */
      processes: setting('WEB_CONCURRENCY', int<undefined>(1, undefined)),
      /** after SIGTERM, how long /readyz answers 503 while requests are still served, before the listener closes */
      drainMs: setting('SHUTDOWN_DRAIN_MS', int(0, 0)),
      /** the shop's console at /console (docs/console.md): on outside production; production serves it only when on */
      console: setting('CONSOLE', onOff(production(runtime) ? 'off' : 'on')),
      /** test-only: GET /__diagnostics (heap after a full GC, live listeners), never in production */
      testDiagnostics: setting('LASTUNIT_TEST_DIAGNOSTICS', onOff('off')),
    })
    .superRefine((s, ctx) => {
      if (!production(runtime)) return;
      if (!s.metricsToken && !isLoopbackHost(s.host))
        refuse(
          ctx,
          'metricsToken',
          `required with NODE_ENV=production when HOST is not loopback (/metrics would be open on ${s.host})`,
        );
      if (s.testDiagnostics) refuse(ctx, 'testDiagnostics', 'test-only: refused with NODE_ENV=production');
    });

export const databaseSettings = (runtime: Runtime) =>
  z
    .object({
      /** absent: the embedded PostgreSQL under DATA_DIR/pg, migrated and seeded with the demo catalog */
      url: setting('DATABASE_URL', postgresUrl),
      /**
       * the same database without a transaction pooler in between (Neon: the endpoint without `-pooler`), for the
       * relay's LISTEN only; absent: the relay polls (RELAY_POLL_MS), except on the embedded database
       */
      directUrl: setting('DATABASE_DIRECT_URL', postgresUrl),
      /** whether the embedded database (and its demo keys) may run: development and test allow it, production not */
      embedded: setting('EMBEDDED_DATABASE', oneOf(['allow', 'refuse'], production(runtime) ? 'refuse' : 'allow')),
      /** where the embedded database and the demo keys live */
      dataDir: setting('DATA_DIR', z.string().default('.data')),
      poolSize: setting('DATABASE_POOL_SIZE', int(1, 20)),
      timeouts: databaseTimeoutSettings,
    })
    .superRefine((s, ctx) => {
      if (s.url || s.embedded === 'allow') return;
      refuse(
        ctx,
        'url',
        production(runtime)
          ? 'required with NODE_ENV=production: the embedded database and its demo keys are for development' +
              ' (EMBEDDED_DATABASE=allow runs a demo box on them)'
          : 'required with EMBEDDED_DATABASE=refuse',
      );
    });

/** `API_KEYS`; whether they may be absent (demo keys) is decided across sections (node/config.ts). */
export const authSettings = (runtime: Runtime) =>
  z
    .object({
      /** absent: demo keys minted under DATA_DIR, where the embedded database runs */
      apiKeys: setting('API_KEYS', apiKeys),
    })
    .superRefine((s, ctx) => {
      if (production(runtime) && s.apiKeys) for (const m of shortKeyProblems(s.apiKeys)) refuse(ctx, 'apiKeys', m);
    });

/**
 * Requests per API key per window by role. A server-side key carries a whole shop's shoppers, so these stop a runaway
 * client, not a sale: storefront and public keys get 300,000 a minute (5,000/s), over ten times what one instance
 * serves; partner integrations 60,000 (1,000/s); admin tooling 6,000 (100/s). One shopper is bounded by the per-buyer
 * limit (docs/edge.md#rate-limits).
 */
export const DEFAULT_ROLE_LIMITS: Required<RoleLimits> = {
  public: 300_000,
  storefront: 300_000,
  partner: 60_000,
  admin: 6_000,
};

export const rateLimitSettings = z.object({
  /** absent: DEFAULT_ROLE_LIMITS; a number: that limit for every role; 0: no per-key limit */
  limit: setting('RATE_LIMIT_PER_WINDOW', int<RoleLimits>(0, DEFAULT_ROLE_LIMITS)),
  windowSeconds: setting('RATE_LIMIT_WINDOW_SECONDS', int(1, 60)),
  /** placeOrder requests per buyer per window; 0: off */
  buyerLimit: setting('RATE_LIMIT_BUYER_PER_WINDOW', int(0, 30)),
});

/** The hold-expiry sweeper and the retention jobs. */
export const sweeperSettings = z.object({
  intervalMs: setting('SWEEP_INTERVAL_MS', int(10, 1000)),
  /** how often the retention jobs (keys, outbox, processed events) run */
  retentionIntervalMs: setting('RETENTION_INTERVAL_MS', int(10, 60_000)),
  retention: z.object({
    /** published outbox rows are kept this long (for debugging; nothing reads them again) */
    outboxHours: setting('OUTBOX_RETENTION_HOURS', int(0, 24)),
    /** processed payment events are kept at least this long (a processor may redeliver an event for days) */
    processedEventsDays: setting('PROCESSED_EVENTS_RETENTION_DAYS', int(30, 30)),
    /** the event log (feed and webhook deliveries) is kept this long (docs/events.md) */
    eventsDays: setting('EVENT_RETENTION_DAYS', int(1, 30)),
  }),
});

/** Bounds of every signed webhook this host receives (payment processors and marketplaces). */
export const webhookSettings = z.object({
  /** signed timestamps further from now are refused */
  toleranceSeconds: setting('WEBHOOK_TOLERANCE_SECONDS', int(1, 300)),
  /** larger bodies are refused with 413 while they stream */
  maxBodyBytes: setting('WEBHOOK_MAX_BODY_BYTES', int(1024, 262_144)),
});

/** `5s,5m,30m,2h`: seconds per retry after the first attempt. */
const durations = (def: string) =>
  z
    .string()
    .default(def)
    .transform((v, ctx) => {
      const unit: Record<string, number> = { ms: 0.001, s: 1, m: 60, h: 3600 };
      const out = v.split(',').map((part) => {
        const m = /^\s*(\d+(?:\.\d+)?)(ms|s|m|h)\s*$/.exec(part);
        return m ? Number(m[1]) * unit[m[2]!]! : Number.NaN;
      });
      if (out.length === 0 || out.length > 20 || out.some((n) => !Number.isFinite(n) || n < 0)) {
        ctx.addIssue({ code: 'custom', message: 'must be 1-20 durations like 5s,5m,30m,2h (units ms, s, m, h)' });
        return z.NEVER;
      }
      return out;
    });

/** Webhooks lastunit sends (docs/events.md): endpoints' deliveries, signed to the Standard Webhooks specification. */
export const webhookDeliverySettings = z.object({
  /** run the delivery worker in this process (off when it runs alone: `npm run worker:webhooks`) */
  worker: setting('WEBHOOK_DELIVERY', onOff('on')),
  /** the wait after each failed attempt; after the last one the delivery is FAILED */
  retrySchedule: setting('WEBHOOK_RETRY_SCHEDULE', durations('5s,5m,30m,2h,5h,10h')),
  /** an endpoint must answer 2xx within this */
  timeoutMs: setting('WEBHOOK_TIMEOUT_MS', int(1, 10_000)),
  /** an endpoint failing (no success) this long is disabled, with a webhook_endpoint.disabled event */
  disableAfterHours: setting('WEBHOOK_DISABLE_AFTER_HOURS', z.coerce.number().positive().max(8760).default(120)),
  /** deliveries in flight per endpoint (different orders go in parallel; one order's go in order) */
  concurrencyPerEndpoint: setting('WEBHOOK_CONCURRENCY_PER_ENDPOINT', int(1, 4)),
  /** endpoints may be http:// and resolve to loopback, private or link-local addresses (a shop's own network, tests) */
  allowPrivateUrls: setting(
    'WEBHOOK_ALLOW_PRIVATE_URLS',
    oneOf(['true', 'false'], 'false').transform((v) => v === 'true'),
  ),
  /** the worker's poll when nothing woke it */
  pollMs: setting('WEBHOOK_POLL_MS', int(10, 250)),
  /** after rotateWebhookEndpointSecret the old secret keeps signing this long beside the new one */
  secretOverlapHours: setting('WEBHOOK_SECRET_OVERLAP_HOURS', int(0, 24)),
});

export const paymentSettings = (runtime: Runtime) =>
  z
    .object({
      /** absent: sandbox outside production; production requires it */
      provider: setting('PAYMENT_PROVIDER', z.enum(['sandbox', 'stripe']).optional()),
      /** production only takes sandbox "payments" (no money moves) when this says so explicitly */
      allowSandbox: setting(
        'ALLOW_SANDBOX_PAYMENTS',
        oneOf(['true', 'false'], 'false').transform((v) => v === 'true'),
      ),
      /** a separately run sandbox; absent: the Node host starts one in-process */
      sandboxUrl: setting('SANDBOX_PAYMENTS_URL', httpUrl),
      timeoutMs: setting('PAYMENT_TIMEOUT_MS', int(1, 5000)),
      deadlineSeconds: setting('PAYMENT_DEADLINE_SECONDS', int(1, 60)),
      /** past this an undecided payment is cancelled at the processor, then released */
      maxPendingSeconds: setting('PAYMENT_MAX_PENDING_SECONDS', int(1, 3600)),
      /** the same bound while the shopper is asked to act (3-D Secure) */
      actionTimeoutSeconds: setting('PAYMENT_ACTION_TIMEOUT_SECONDS', int(1, 900)),
      /** on_confirm: capture every confirmed payment; manual: an admin captureOrder does */
      capture: setting('PAYMENT_CAPTURE', oneOf(['on_confirm', 'manual'], 'on_confirm')),
      /** the sandbox's HMAC secret; absent: the published development secret, outside production only */
      webhookSecret: setting('PAYMENT_WEBHOOK_SECRET', text),
      reconcileIntervalMs: setting('RECONCILE_INTERVAL_MS', int(10, 1000)),
      stripeSecretKey: setting('STRIPE_SECRET_KEY', text),
      stripeWebhookSecret: setting('STRIPE_WEBHOOK_SECRET', text),
      /** test-only fault injection: sleep this long between the hold and the authorization (0 = never) */
      faultPauseBeforeAuthorizeMs: setting('LASTUNIT_FAULT_PAUSE_BEFORE_AUTHORIZE_MS', int(0, 0)),
    })
    .superRefine((p, ctx) => {
      if (p.provider === 'stripe') {
        if (!p.stripeSecretKey) refuse(ctx, 'stripeSecretKey', 'required when PAYMENT_PROVIDER=stripe');
        if (!p.stripeWebhookSecret) refuse(ctx, 'stripeWebhookSecret', 'required when PAYMENT_PROVIDER=stripe');
      }
      if (!production(runtime)) {
        // a separately run sandbox must share the secret explicitly; the in-process one may use the development one
        if (p.provider !== 'stripe' && p.sandboxUrl && !p.webhookSecret)
          refuse(ctx, 'webhookSecret', 'required when SANDBOX_PAYMENTS_URL is set');
        return;
      }
      // The production profile: no fake money and no published secret. Messages never quote a value.
      if (!p.provider)
        refuse(
          ctx,
          'provider',
          'required with NODE_ENV=production (stripe, with STRIPE_SECRET_KEY and STRIPE_WEBHOOK_SECRET;' +
            ' or sandbox, with ALLOW_SANDBOX_PAYMENTS=true and PAYMENT_WEBHOOK_SECRET)',
        );
      if (p.provider === 'sandbox' && !p.allowSandbox)
        refuse(
          ctx,
          'provider',
          'sandbox takes no money: refused with NODE_ENV=production unless ALLOW_SANDBOX_PAYMENTS=true',
        );
      if (p.provider === 'sandbox' && !p.webhookSecret)
        refuse(
          ctx,
          'webhookSecret',
          'required with NODE_ENV=production and PAYMENT_PROVIDER=sandbox (the development secret is public)',
        );
      for (const field of ['webhookSecret', 'stripeWebhookSecret'] as const) {
        const v = p[field];
        if (v && DEV_SECRETS.has(v))
          refuse(ctx, field, 'is the published development secret: refused with NODE_ENV=production');
      }
    })
    .transform((p) => ({
      ...p,
      // absent outside production (production refused the start above)
      provider: p.provider ?? 'sandbox',
      webhookSecret: p.webhookSecret ?? (production(runtime) ? '' : DEV_WEBHOOK_SECRET),
    }));

/** OpenTelemetry traces (docs/operations.md): off unless an OTLP endpoint is given. */
export const tracingSettings = z.object({
  /** the OTLP/HTTP collector's base URL (spans go to <url>/v1/traces); absent: no spans are made at all */
  otlpEndpoint: setting('OTEL_EXPORTER_OTLP_ENDPOINT', httpUrl),
  /** the service.name resource attribute of every span */
  serviceName: setting('OTEL_SERVICE_NAME', z.string().default('lastunit')),
});

/** Marketplace channels (docs/channels.md). */
export const channelSettings = (runtime: Runtime) =>
  z
    .object({
      /** run the marketplace pusher in this process */
      pusher: setting('CHANNEL_PUSHER', onOff('on')),
      /** the pusher's fallback poll (it is woken after every committed stock change) */
      pollMs: setting('CHANNEL_PUSH_POLL_MS', int(20, 500)),
      /** bound on every marketplace call */
      timeoutMs: setting('CHANNEL_PUSH_TIMEOUT_MS', int(1, 5000)),
      /** the Admin API token SHOPIFY channels are called with */
      shopifyAccessToken: setting('SHOPIFY_ACCESS_TOKEN', text),
      /** the marketplace sandbox in this process with the demo channel pointing at it: in development by default */
      marketplaceSandbox: setting(
        'MARKETPLACE_SANDBOX',
        oneOf(['in-process', 'off'], runtime.nodeEnv === 'development' ? 'in-process' : 'off').transform(
          (v) => v === 'in-process',
        ),
      ),
    })
    .superRefine((s, ctx) => {
      if (production(runtime) && s.marketplaceSandbox)
        refuse(
          ctx,
          'marketplaceSandbox',
          'in-process is a fake marketplace with a demo channel: refused with NODE_ENV=production',
        );
    });

/** Live availability (docs/live.md): pubsub, the availability cache, the outbox relay, graphql-ws sockets. */
export const liveSettings = z.object({
  /** with it: Redis pubsub across instances, the availability cache and shared rate limits; without: in-process */
  redisUrl: setting('REDIS_URL', redisUrl),
  /** prefixes every Redis key and channel, so several deployments (or test files) share one Redis */
  redisKeyPrefix: setting(
    'REDIS_KEY_PREFIX',
    z
      .string()
      .regex(/^[A-Za-z0-9:_.-]{1,64}$/, 'must be 1-64 letters, digits, colon, dot, dash or underscore')
      .default('lastunit:'),
  ),
  cacheTtlSeconds: setting('CACHE_TTL_SECONDS', int(1, 5)),
  /** run the outbox relay in this process (off when it runs alone: `npm run worker:relay`) */
  relay: setting('RELAY', onOff('on')),
  relayPollMs: setting('RELAY_POLL_MS', int(50, 500)),
  relayBatchSize: setting('RELAY_BATCH_SIZE', int(1, 200)),
  /** how long a relay's claim of a batch lasts: a relay that dies mid-batch delays those events by at most this */
  relayLeaseMs: setting('RELAY_LEASE_MS', int(100, 5000)),
  sockets: z.object({
    maxSubscriptionsPerSocket: setting('MAX_SUBSCRIPTIONS_PER_SOCKET', int(1, 100)),
    maxSocketsPerClient: setting('MAX_SOCKETS_PER_CLIENT', int(1, 100)),
    maxSocketsPerIp: setting('MAX_SOCKETS_PER_IP', int(1, 32)),
  }),
});

/**
 * The live page's demo shop backend (docs/live.md#buyer-tokens): `POST /live/buyer-token` mints a buyer token with the
 * storefront key of the page's API client for a demo customer kept in a cookie, as a shop's own backend would.
 */
export const liveShopSettings = (runtime: Runtime) =>
  z
    .object({
      /** `demo`: serve the demo shop backend; development and test only */
      backend: setting(
        'LIVE_SHOP_BACKEND',
        oneOf(['demo', 'off'], production(runtime) ? 'off' : 'demo').transform((v) => v === 'demo'),
      ),
      /** how long the buyer tokens it mints are valid */
      tokenTtlSeconds: setting('LIVE_SHOP_TOKEN_TTL_SECONDS', int(1, 900)),
    })
    .superRefine((s, ctx) => {
      if (production(runtime) && s.backend)
        refuse(
          ctx,
          'backend',
          'demo mints buyer tokens for any browser that asks: refused with NODE_ENV=production (a shop mints its own)',
        );
      if (s.tokenTtlSeconds > 86_400) refuse(ctx, 'tokenTtlSeconds', 'must be at most 86400 (the longest buyer token)');
    });
