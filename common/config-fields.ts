// The kinds of value a setting holds, each parsed by one zod schema that also carries its default, and `setting`, which
// names the environment variable a section's field is read from (common/config-reader.ts reads them).
import { z } from 'zod';
import { CLIENT_NAME, ROLES, type ApiKey, type Role } from './caller.js';

/** Where a field's environment variable name is kept (zod metadata, read by common/config-reader.ts). */
export type SettingMeta = { env: string };

/**
 * A section field read from the environment variable `variable`; `schema` parses its text and holds its default.
 * An empty variable counts as unset.
 * @example z.object({ port: setting('PORT', int(0, 4000)) })
 */
export const setting = <S extends z.ZodType>(variable: string, schema: S): S =>
  schema.meta({ env: variable } satisfies SettingMeta);

/** An integer: unset gives `def`; anything else must be an integer >= `min`. */
export const int = <D = number>(min: number, def: D) =>
  z
    .string()
    .optional()
    .transform((v, ctx): number | D => {
      if (v === undefined) return def;
      if (!/^\d+$/.test(v.trim()) || Number(v) < min) {
        ctx.addIssue({ code: 'custom', message: `must be an integer >= ${min}, got "${v}"` });
        return z.NEVER;
      }
      return Number(v);
    });

/** One of `values`; unset gives `def`. */
export const oneOf = <const V extends readonly [string, ...string[]]>(values: V, def: V[number]) =>
  z.enum(values).default(def);

/** `on` or `off` as a boolean; unset gives `def`. */
export const onOff = (def: 'on' | 'off') =>
  z
    .enum(['on', 'off'])
    .default(def)
    .transform((v) => v === 'on');

/** Free text; unset stays undefined. */
export const text = z.string().optional();

/** An http(s):// URL without a trailing slash; unset stays undefined. */
export const httpUrl = z
  .string()
  .regex(/^https?:\/\/[^\s]+$/, 'must be an http(s):// URL')
  .transform((v) => v.replace(/\/+$/, ''))
  .optional();

/** A postgres:// URL; unset stays undefined. */
export const postgresUrl = z
  .string()
  .regex(/^postgres(ql)?:\/\//, 'must be a postgres:// URL')
  .optional();

/** A redis:// or rediss:// URL; unset stays undefined. */
export const redisUrl = z
  .string()
  .regex(/^rediss?:\/\//, 'must be a redis:// or rediss:// URL')
  .optional();

/**
 * API keys, comma-separated: `role:client:key` (the client's name survives key rotation) or `role:key` (the client is
 * derived from the key; such a key may not contain ':'). A bad entry is reported by its position, never echoed: it
 * may hold a secret. Unset stays undefined.
 */
export const apiKeys = z
  .string()
  .optional()
  .transform((v, ctx): ApiKey[] | undefined => {
    if (v === undefined || v.trim() === '') return undefined;
    const out: ApiKey[] = [];
    const parts = v
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean);
    parts.forEach((part, i) => {
      const bits = part.split(':');
      const role = bits[0] as Role;
      const client = bits.length >= 3 ? bits[1]! : undefined;
      const key = bits.length >= 3 ? bits.slice(2).join(':') : (bits[1] ?? '');
      const problems: string[] = [];
      if (!ROLES.includes(role)) problems.push(`the role must be one of ${ROLES.join('/')}`);
      if (client !== undefined && !CLIENT_NAME.test(client))
        problems.push('the client name must be 1-63 lowercase letters, digits, dot or dash');
      if (key.length < 8) problems.push('the key must have 8+ characters');
      if (problems.length) {
        ctx.addIssue({
          code: 'custom',
          message: `entry ${i + 1} of ${parts.length} is not role:client:key or role:key: ${problems.join('; ')}`,
        });
        return;
      }
      out.push(client ? { role, client, key } : { role, key });
    });
    return out;
  });
