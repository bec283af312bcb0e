// The pieces of configuration both hosts read (Node: node/config.ts, Workers: edge/worker-config.ts): one parser per
// kind of value, the request limits, and one error type listing every problem at once.
import { z } from 'zod';
import { CLIENT_NAME, ROLES, type ApiKey, type Role } from './caller.js';

/** A configuration problem; the message lists every bad variable by name. Entries exit with code 2. */
export class ConfigError extends Error {}

/** An integer variable: absent or empty gives `def`; anything else must be an integer >= `min`. */
export const int = (min: number, def: number) =>
  z
    .string()
    .optional()
    .transform((v, ctx) => {
      if (v === undefined || v === '') return def;
      if (!/^\d+$/.test(v.trim()) || Number(v) < min) {
        ctx.addIssue({ code: 'custom', message: `must be an integer >= ${min}, got "${v}"` });
        return z.NEVER;
      }
      return Number(v);
    });

/**
 * API keys, comma-separated: `role:client:key` (the client's name survives key rotation) or `role:key` (the client is
 * derived from the key; such a key may not contain ':'). A bad entry is reported by its position, never echoed: it
 * may hold a secret.
 */
export const apiKeys = z
  .string()
  .optional()
  .transform((v, ctx): ApiKey[] | undefined => {
    if (v === undefined || v.trim() === '') return undefined;
    const out: ApiKey[] = [];
    const parts = v.split(',').map((s) => s.trim()).filter(Boolean);
    parts.forEach((part, i) => {
      const bits = part.split(':');
      const role = bits[0] as Role;
      const client = bits.length >= 3 ? bits[1]! : undefined;
      const key = bits.length >= 3 ? bits.slice(2).join(':') : (bits[1] ?? '');
      const problems: string[] = [];
      if (!ROLES.includes(role)) problems.push(`the role must be one of ${ROLES.join('/')}`);
      if (client !== undefined && !CLIENT_NAME.test(client)) problems.push('the client name must be 1-63 lowercase letters, digits, dot or dash');
      if (key.length < 8) problems.push('the key must have 8+ characters');
      if (problems.length) {
        ctx.addIssue({ code: 'custom', message: `entry ${i + 1} of ${parts.length} is not role:client:key or role:key: ${problems.join('; ')}` });
        return;
      }
      out.push(client ? { role, client, key } : { role, key });
    });
    return out;
  });

/** Production keys are long enough not to be guessed: `API_KEYS` entries shorter than this refuse a production start. */
export const PRODUCTION_MIN_KEY_LENGTH = 24;

/**
 * The production profile's check of API keys: one line per key shorter than PRODUCTION_MIN_KEY_LENGTH, naming its
 * position, never the key.
 * @example shortKeyProblems(config.apiKeys) // ['entry 2 of 3 is shorter than 24 characters']
 */
export function shortKeyProblems(keys: ApiKey[] | undefined): string[] {
  if (!keys) return [];
  return keys.flatMap((k, i) =>
    k.key.length < PRODUCTION_MIN_KEY_LENGTH ? [`entry ${i + 1} of ${keys.length} is shorter than ${PRODUCTION_MIN_KEY_LENGTH} characters (required in production)`] : [],
  );
}

/**
 * Database session bounds, shared by both hosts (pg on Node, Neon on Workers): how long to wait for a connection, a
 * statement, a lock, and an open transaction that does nothing (docs/database.md). 0 turns one off.
 */
export const databaseTimeoutFields = {
  DATABASE_CONNECT_TIMEOUT_MS: int(0, 5_000),
  DATABASE_STATEMENT_TIMEOUT_MS: int(0, 30_000),
  DATABASE_LOCK_TIMEOUT_MS: int(0, 10_000),
  DATABASE_IDLE_IN_TRANSACTION_TIMEOUT_MS: int(0, 60_000),
};
export type DatabaseTimeouts = { connectMs: number; statementMs: number; lockMs: number; idleInTransactionMs: number };
export const toDatabaseTimeouts = (c: {
  DATABASE_CONNECT_TIMEOUT_MS: number;
  DATABASE_STATEMENT_TIMEOUT_MS: number;
  DATABASE_LOCK_TIMEOUT_MS: number;
  DATABASE_IDLE_IN_TRANSACTION_TIMEOUT_MS: number;
}): DatabaseTimeouts => ({
  connectMs: c.DATABASE_CONNECT_TIMEOUT_MS,
  statementMs: c.DATABASE_STATEMENT_TIMEOUT_MS,
  lockMs: c.DATABASE_LOCK_TIMEOUT_MS,
  idleInTransactionMs: c.DATABASE_IDLE_IN_TRANSACTION_TIMEOUT_MS,
});

/** Request limits, shared by both hosts (docs/edge.md has the table). */
export const limitsFields = {
  MAX_BODY_BYTES: int(256, 65_536),
  MAX_DEPTH: int(1, 8),
  MAX_ALIASES: int(0, 15),
  MAX_TOKENS: int(10, 1_000),
  MAX_COST: int(10, 1_000),
};
export type Limits = { maxBodyBytes: number; maxDepth: number; maxAliases: number; maxTokens: number; maxCost: number };
export const toLimits = (c: { MAX_BODY_BYTES: number; MAX_DEPTH: number; MAX_ALIASES: number; MAX_TOKENS: number; MAX_COST: number }): Limits => ({
  maxBodyBytes: c.MAX_BODY_BYTES,
  maxDepth: c.MAX_DEPTH,
  maxAliases: c.MAX_ALIASES,
  maxTokens: c.MAX_TOKENS,
  maxCost: c.MAX_COST,
});

/**
 * The order settings both hosts pass to the domain. `maxActiveHolds`: active holds per buyer (MAX_ACTIVE_HOLDS; 0 = no
 * limit; absent = the default of orders/buyer.ts). `claimBatching` (CLAIM_BATCHING): false sends every claim alone, so
 * concurrent claims of one SKU meet in PostgreSQL instead of queueing in this process (absent = on).
 */
export type OrderSettings = {
  holdTtlSeconds: number;
  idempotencyRetentionHours: number;
  maxLines: number;
  maxLineQuantity: number;
  maxActiveHolds?: number;
  claimBatching?: boolean;
  /** CLAIM_BATCHES_IN_FLIGHT: batches of one SKU in flight at once (absent = 1) */
  claimBatchesInFlight?: number;
};

/** Active holds per buyer (I14), read by both hosts: `MAX_ACTIVE_HOLDS`, 0 = no limit. */
export const holdLimitFields = { MAX_ACTIVE_HOLDS: int(0, 5) };

/**
 * Parses `env` with `schema`, listing every problem (one line per variable) in one ConfigError.
 * @example const c = parseOrThrow(schema, process.env)
 */
export function parseOrThrow<S extends z.ZodType>(schema: S, env: Record<string, unknown>): z.output<S> {
  const parsed = schema.safeParse(env);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `  ${i.path.join('.')}: ${i.message}`);
    throw new ConfigError(`invalid configuration:\n${lines.join('\n')}`);
  }
  return parsed.data;
}
