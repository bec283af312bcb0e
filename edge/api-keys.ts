import { createHash, randomBytes } from 'node:crypto';
import type { MiddlewareHandler } from 'hono';
import type { ApiKey } from './config.js';
import type { Caller } from '../schema/context.js';

/** An API client's stable id: its role and a digest of its key (the key itself is never stored). */
export function clientIdFor(k: ApiKey): string {
  return `${k.role}_${createHash('sha256').update(k.key).digest('hex').slice(0, 16)}`;
}

/** Random demo keys for the embedded default, one per role. */
export function generateDemoKeys(): ApiKey[] {
  return (['storefront', 'partner', 'admin'] as const).map((role) => ({ role, key: `lu_${role}_${randomBytes(12).toString('hex')}` }));
}

export type AuthVariables = { caller: Caller };

/**
 * `Authorization: Bearer <key>` to a caller; a missing or unknown key is answered 401 before GraphQL runs.
 * @example app.use('/graphql', apiKeyAuth(keys))
 */
export function apiKeyAuth(keys: ApiKey[], opts: { allowAnonymous?: (req: Request) => boolean } = {}): MiddlewareHandler<{ Variables: AuthVariables }> {
  const byKey = new Map(keys.map((k) => [k.key, { clientId: clientIdFor(k), role: k.role } satisfies Caller]));
  return async function apiKeyAuth(c, next) {
    const header = c.req.header('authorization') ?? '';
    const m = /^Bearer\s+(\S+)\s*$/i.exec(header);
    const caller = m ? byKey.get(m[1]!) : undefined;
    if (!caller) {
      if (opts.allowAnonymous?.(c.req.raw)) return next();
      return c.json(
        { errors: [{ message: m ? 'unknown API key' : 'missing API key: send Authorization: Bearer <key>', extensions: { code: 'UNAUTHENTICATED' } }] },
        401,
        { 'WWW-Authenticate': 'Bearer realm="lastunit"' },
      );
    }
    c.set('caller', caller);
    return next();
  };
}
