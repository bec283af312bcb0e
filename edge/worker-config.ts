// The Worker's configuration, from its bindings (wrangler.toml [vars] and secrets), validated like the Node host's.
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

export { ConfigError };

const workerSchema = z.object({
  ...limitsFields,
  ...holdLimitFields,
  ...databaseTimeoutFields,
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
}).superRefine((c, ctx) => {
  // The production profile holds on Workers whatever NODE_ENV says: a deployed worker is reachable by anyone. (It
  // takes no payments and has no webhook route: placeOrder refuses `payment` there, so no payment setting applies.)
  for (const message of shortKeyProblems(c.API_KEYS)) ctx.addIssue({ code: 'custom', path: ['API_KEYS'], message });
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
  /** active holds per buyer (I14); 0: no limit */
  maxActiveHolds: number;
  databaseTimeouts: DatabaseTimeouts;
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
    maxActiveHolds: c.MAX_ACTIVE_HOLDS,
    databaseTimeouts: toDatabaseTimeouts(c),
    neonWsProxy: c.NEON_WS_PROXY || undefined,
  };
}

