// The pieces of configuration both hosts read (Node: node/config.ts, Workers: edge/worker-config.ts): one parser per
// kind of value, the request limits, and one error type listing every problem at once.
import { z } from 'zod';
import { ROLES, type ApiKey, type Role } from './caller.js';

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

/** `role:key` entries, comma-separated. */
export const apiKeys = z
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

/** The order settings both hosts pass to the domain. */
export type OrderSettings = { holdTtlSeconds: number; idempotencyRetentionHours: number; maxLines: number; maxLineQuantity: number };

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
