// The Node host's configuration (npm start and every command-line entry): its sections read once per process, the
// checks that span sections, every problem listed at once. The types are inferred from the sections.
import { availableParallelism } from 'node:os';
import { z } from 'zod';
import { httpUrl, int, setting, text } from '../common/config-fields.js';
import { ConfigError, configReader, readSection } from '../common/config-reader.js';
import { buyerTokenSettings, limitSettings, orderSettings } from '../common/config-sections.js';
import {
  authSettings,
  channelSettings,
  databaseSettings,
  DEV_WEBHOOK_SECRET,
  httpSettings,
  liveSettings,
  liveShopSettings,
  paymentSettings,
  rateLimitSettings,
  runtimeSettings,
  tracingSettings,
  sweeperSettings,
  webhookDeliverySettings,
  webhookSettings,
  type Runtime,
} from './config-sections.js';

export { ConfigError, DEV_WEBHOOK_SECRET };
export { DEV_BUYER_TOKEN_SECRET } from '../common/config-sections.js';
export { isLoopbackHost } from './config-sections.js';

/** What one entry needs beyond what every entry checks, noted with the rest (`problem` names the variable). */
export type EntryNeeds = (config: Config, problem: (variable: string, message: string) => void) => void;

/**
 * Reads and validates the whole configuration once, section by section; every problem is listed, each naming its
 * variable, in one ConfigError.
 * @example const config = loadConfig(process.env, apiHostNeeds)
 */
export function loadConfig(env: Record<string, string | undefined>, needs?: EntryNeeds) {
  const reader = configReader(env);
  const runtime = reader.read(runtimeSettings);
  const config = {
    runtime,
    http: reader.read(httpSettings(runtime)),
    database: reader.read(databaseSettings(runtime)),
    auth: reader.read(authSettings(runtime)),
    orders: reader.read(orderSettings),
    limits: reader.read(limitSettings),
    rateLimits: reader.read(rateLimitSettings),
    sweeper: reader.read(sweeperSettings),
    payments: reader.read(paymentSettings(runtime)),
    webhooks: reader.read(webhookSettings),
    webhookDelivery: reader.read(webhookDeliverySettings),
    channels: reader.read(channelSettings(runtime)),
    live: reader.read(liveSettings),
    liveShop: reader.read(liveShopSettings(runtime)),
    buyerTokens: reader.read(buyerTokenSettings(runtime)),
    tracing: reader.read(tracingSettings),
  };
  // WEB_CONCURRENCY: absent means one process per core in production with DATABASE_URL and REDIS_URL, else 1
  const asked = config.http.processes;
  if (asked !== undefined && asked > 1) {
    if (!config.database.url)
      reader.problem(
        'WEB_CONCURRENCY',
        'must be 1 without DATABASE_URL (the embedded database belongs to one process)',
      );
    if (config.channels.marketplaceSandbox)
      reader.problem(
        'WEB_CONCURRENCY',
        'must be 1 with MARKETPLACE_SANDBOX=in-process (its demo channel is per process)',
      );
    // without Redis each process's relay publishes to its own subscribers only: a subscriber would miss the events
    // the other processes' relays took from the outbox
    if (config.runtime.nodeEnv === 'production' && !config.live.redisUrl && config.live.relay)
      reader.problem(
        'WEB_CONCURRENCY',
        'needs REDIS_URL with NODE_ENV=production (live events reach the subscribers of every process only through Redis)',
      );
  }
  const auto =
    config.runtime.nodeEnv === 'production' &&
    !!config.database.url &&
    !!config.live.redisUrl &&
    !config.channels.marketplaceSandbox;
  const processes = asked ?? (auto ? availableParallelism() : 1);
  // CLAIM_LANES_PER_SKU: absent means this host's cores shared by its processes, halved when PostgreSQL runs on this
  // machine too (a bucketed SKU's batches in flight at once per process: each needs a share of this process and a
  // PostgreSQL backend, and more than the cores can run only makes every batch smaller and dearer; on 2 cores shared
  // with PostgreSQL one lane sold 1.01-1.23x of two, docs/capacity.md)
  const cores = Math.floor(availableParallelism() / processes);
  const lanes =
    config.orders.claimLanesPerSku ??
    Math.max(1, databaseOnThisMachine(config.database.url) ? Math.floor(cores / 2) : cores);
  const resolved = {
    ...config,
    http: { ...config.http, processes },
    orders: { ...config.orders, claimLanesPerSku: lanes },
  };
  needs?.(resolved, reader.problem);
  reader.done();
  return resolved;
}
export type Config = ReturnType<typeof loadConfig>;

/**
 * Whether PostgreSQL runs on this machine: the embedded one (no URL), or a URL whose host (or its `?host=`, which
 * libpq and pg take over the URL's) is a loopback address or a socket folder. A pooler or proxy on this machine in
 * front of a remote database counts as here too: CLAIM_LANES_PER_SKU then says how many.
 */
export function databaseOnThisMachine(url: string | undefined): boolean {
  if (!url) return true;
  let host: string;
  try {
    const u = new URL(url);
    host = u.searchParams.getAll('host').at(-1) ?? decodeURIComponent(u.hostname);
  } catch {
    return false;
  }
  return (
    host === '' ||
    host.startsWith('/') ||
    host === 'localhost' ||
    host === '[::1]' ||
    host === '::1' ||
    /^127\./.test(host)
  );
}

/**
 * The API host (`npm start`) serves API keys: its own (`API_KEYS`), or demo keys it mints, only where the embedded
 * database runs (they are printed, and the embedded database is for development or an explicit demo box).
 */
export const apiHostNeeds: EntryNeeds = (c, problem) => {
  if (c.auth.apiKeys) return;
  if (c.database.url)
    problem('API_KEYS', 'required when DATABASE_URL is set (demo keys are only for the embedded database)');
  else if (c.database.embedded === 'refuse')
    problem(
      'API_KEYS',
      c.runtime.nodeEnv === 'production'
        ? 'required with NODE_ENV=production (demo keys only with EMBEDDED_DATABASE=allow)'
        : 'required with EMBEDDED_DATABASE=refuse',
    );
};

/** Settings of the standalone sandbox processor (`npm run sandbox:payments`). */
const sandboxSettings = (runtime: Runtime) =>
  z
    .object({
      port: setting('SANDBOX_PORT', int(0, 4100)),
      webhookUrl: setting('SANDBOX_WEBHOOK_URL', httpUrl),
      /** absent: the development secret, in development and test only */
      webhookSecret: setting('PAYMENT_WEBHOOK_SECRET', text),
      hangMs: setting('SANDBOX_HANG_MS', int(0, 10_000)),
    })
    .superRefine((c, ctx) => {
      if (runtime.nodeEnv !== 'production') return;
      if (!c.webhookSecret)
        ctx.addIssue({
          code: 'custom',
          path: ['webhookSecret'],
          message: 'required with NODE_ENV=production (the development secret is public)',
        });
      else if (c.webhookSecret === DEV_WEBHOOK_SECRET)
        ctx.addIssue({
          code: 'custom',
          path: ['webhookSecret'],
          message: 'is the published development secret: refused with NODE_ENV=production',
        });
    })
    .transform((c) => ({ ...c, webhookSecret: c.webhookSecret ?? DEV_WEBHOOK_SECRET }));

/**
 * The standalone sandbox's settings, validated like the rest.
 * @example const sandbox = await startSandbox(loadSandboxConfig(process.env))
 */
export function loadSandboxConfig(env: Record<string, string | undefined>) {
  const reader = configReader(env);
  const sandbox = reader.read(sandboxSettings(reader.read(runtimeSettings)));
  reader.done();
  return sandbox;
}

const LOOPBACK = /^(localhost|127(\.\d{1,3}){3}|\[::1\])$/;
/** What `npm run partner:publish` needs (node/partner-publish-cli.ts): two variables and three arguments. */
const publishSettings = z.object({
  url: setting(
    'LASTUNIT_URL',
    z.string({ error: 'required: the API to publish to, e.g. https://api.example.com/graphql' }).refine((v) => {
      try {
        const u = new URL(v);
        // the admin key must not cross a network in clear text: plain http only to this machine
        return u.protocol === 'https:' || (u.protocol === 'http:' && LOOPBACK.test(u.hostname));
      } catch {
        return false;
      }
    }, 'must be an https:// URL (http:// only for localhost)'),
  ),
  adminKey: setting(
    'LASTUNIT_ADMIN_KEY',
    z.string({ error: 'required: an admin API key of that server' }).min(8, 'must have 8+ characters'),
  ),
  app: setting('app', z.string({ error: 'required: --app <name>, the client name of the partner keys' })),
  version: setting('version', z.string({ error: 'required: --version <version>' })),
  manifestPath: setting(
    'manifest',
    z.string({ error: 'required: the manifest file, e.g. persisted-query-manifest.json' }),
  ),
});
export type PublishConfig = z.infer<typeof publishSettings>;

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
  if (extra.length)
    throw new ConfigError(
      `invalid arguments:\n  unexpected ${extra.join(' ')} (usage: --app <name> --version <v> <manifest.json>)`,
    );
  const c = readSection(
    { LASTUNIT_URL: env.LASTUNIT_URL, LASTUNIT_ADMIN_KEY: env.LASTUNIT_ADMIN_KEY, ...args },
    publishSettings,
  );
  const url = new URL(c.url);
  if (url.pathname === '/') url.pathname = '/graphql'; // a bare origin means its /graphql
  return { ...c, url: url.toString() };
}
