// The Worker's configuration, from its bindings (wrangler.toml [vars] and secrets): the sections it shares with the
// Node host (limits, orders, database timeouts) and its own, read by the same reader, every problem listed at once.
import { z } from 'zod';
import { apiKeys, int, oneOf, setting, text } from '../common/config-fields.js';
import { ConfigError, configReader } from '../common/config-reader.js';
import {
  buyerTokenSettings,
  databaseTimeoutSettings,
  limitSettings,
  orderSettings,
  shortKeyProblems,
} from '../common/config-sections.js';

export { ConfigError };

export const runtimeSettings = z.object({
  nodeEnv: setting('NODE_ENV', oneOf(['development', 'production', 'test'], 'production')),
});

export const databaseSettings = z.object({
  url: setting(
    'DATABASE_URL',
    z
      .string({ error: 'required (set it with `wrangler secret put DATABASE_URL`)' })
      .regex(/^postgres(ql)?:\/\//, 'must be a postgres:// URL (set it with `wrangler secret put DATABASE_URL`)'),
  ),
  /** dev/test only: host:port of a plain WebSocket-to-TCP bridge instead of Neon's proxy */
  neonWsProxy: setting('NEON_WS_PROXY', text),
  timeouts: databaseTimeoutSettings,
});

/**
 * The API keys, always held to the production length whatever NODE_ENV says: a deployed worker is reachable by
 * anyone. (It takes no payments and has no webhook route: placeOrder refuses `payment` there, so no payment setting
 * applies.)
 */
export const authSettings = z
  .object({
    apiKeys: setting(
      'API_KEYS',
      apiKeys.transform((keys, ctx) => {
        if (keys) return keys;
        ctx.addIssue({ code: 'custom', message: 'required (set it with `wrangler secret put API_KEYS`)' });
        return z.NEVER;
      }),
    ),
  })
  .superRefine((s, ctx) => {
    for (const message of shortKeyProblems(s.apiKeys)) ctx.addIssue({ code: 'custom', path: ['apiKeys'], message });
  });

/** Persisted public reads served from the Cache API (edge/edge-cache.ts). */
export const edgeCacheSettings = z.object({
  ttlSeconds: setting('EDGE_CACHE_TTL_SECONDS', int(0, 2)),
  staleWhileRevalidateSeconds: setting('EDGE_CACHE_SWR_SECONDS', int(0, 10)),
});

/**
 * The Worker's configuration from its bindings, validated like loadConfig.
 * @example const config = loadWorkerConfig(env)
 */
export function loadWorkerConfig(env: Record<string, unknown>) {
  const reader = configReader(env);
  const runtime = reader.read(runtimeSettings);
  const config = {
    runtime,
    database: reader.read(databaseSettings),
    auth: reader.read(authSettings),
    orders: reader.read(orderSettings),
    limits: reader.read(limitSettings),
    edgeCache: reader.read(edgeCacheSettings),
    // absent: no buyer tokens here (a public key's buyer is its address); set, the Node host's rules
    buyerTokens: reader.read(buyerTokenSettings(runtime, false)),
  };
  reader.done();
  return config;
}
export type WorkerConfig = ReturnType<typeof loadWorkerConfig>;
