import type { MiddlewareHandler } from 'hono';
import type { ApiKey } from '../common/caller.js';
import type { Caller, Role } from '../common/caller.js';
import { sha256Hex } from '../common/hash.js';

/**
 * An API client's stable id: its configured name (`role:client:key`), which survives key rotation, or else its role and
 * a digest of its key (the key itself is never stored).
 */
export async function clientIdFor(k: ApiKey): Promise<string> {
  return k.client ?? `${k.role}_${(await sha256Hex(k.key)).slice(0, 16)}`;
}

/** Equal in time independent of where two equal-length digests first differ. */
function sameDigest(a: string, b: string): boolean {
  let diff = a.length ^ b.length;
  for (let i = 0; i < a.length && i < b.length; i++) diff |= a.charCodeAt(i) ^ b.charCodeAt(i);
  return diff === 0;
}

/** The roles whose demo keys are one shop's: the page's public key and the storefront key its backend mints with. */
export const DEMO_SHOP_ROLES: readonly Role[] = ['public', 'storefront'];

/**
 * Random demo keys for the embedded default, one per role. The partner key names `partnerApp` as its app; the public
 * and storefront keys name `shopClient`, one API client, so a buyer token the storefront key mints is accepted with
 * the public key (docs/api.md#buyer-tokens-public-keys).
 */
export function generateDemoKeys(clients: { partnerApp: string; shopClient: string }): ApiKey[] {
  const hex = () =>
    Array.from(crypto.getRandomValues(new Uint8Array(12)), (b) => b.toString(16).padStart(2, '0')).join('');
  return (['public', 'storefront', 'partner', 'admin'] as const).map((role) => ({
    role,
    key: `lu_${role}_${hex()}`,
    ...(role === 'partner' ? { client: clients.partnerApp } : {}),
    ...(DEMO_SHOP_ROLES.includes(role) ? { client: clients.shopClient } : {}),
  }));
}

export type AuthVariables = { caller: Caller };

/**
 * Whether an `Authorization` header carries exactly `Bearer <secret>`, compared as digests in constant time.
 * @example const allowed = bearerMatcher(config.metricsToken); if (!(await allowed(header))) return 401
 */
export function bearerMatcher(secret: string): (header: string | undefined | null) => Promise<boolean> {
  const expected = sha256Hex(secret);
  return async (header) => {
    const m = /^Bearer\s+(\S+)\s*$/i.exec(header ?? '');
    return sameDigest(await expected, await sha256Hex(m ? m[1]! : `\u0000${header ?? ''}`));
  };
}

/**
 * A lookup from a presented key (or an `Authorization: Bearer <key>` value) to its caller; undefined when unknown.
 * Client ids are digests (Web Crypto is async): computed once, on the first lookup.
 * @example const caller = await lookupCaller('Bearer lu_storefront_...')
 */
export function createCallerLookup(
  keys: ApiKey[],
): (keyOrHeader: string | undefined | null) => Promise<Caller | undefined> {
  let known: Promise<{ digest: string; caller: Caller }[]> | undefined;
  const table = () =>
    (known ??= Promise.all(
      keys.map(async (k) => ({
        digest: await sha256Hex(k.key),
        caller: { clientId: await clientIdFor(k), role: k.role },
      })),
    ));
  return async (keyOrHeader) => {
    if (!keyOrHeader) return undefined;
    const m = /^Bearer\s+(\S+)\s*$/i.exec(keyOrHeader);
    // Compared as digests, against every key, without stopping at the first match: the time taken tells nothing
    // about how much of a guessed key was right.
    const digest = await sha256Hex(m ? m[1]! : keyOrHeader.trim());
    let found: Caller | undefined;
    for (const k of await table()) if (sameDigest(k.digest, digest) && !found) found = k.caller;
    return found;
  };
}

/**
 * `Authorization: Bearer <key>` to a caller; a missing or unknown key is answered 401 before GraphQL runs.
 * @example app.use('/graphql', apiKeyAuth(keys))
 */
export function apiKeyAuth(
  keys: ApiKey[],
  opts: { allowAnonymous?: (req: Request) => boolean } = {},
): MiddlewareHandler<{ Variables: AuthVariables }> {
  const lookup = createCallerLookup(keys);
  return async function apiKeyAuth(c, next) {
    const header = c.req.header('authorization') ?? '';
    const m = /^Bearer\s+(\S+)\s*$/i.exec(header);
    const caller = m ? await lookup(header) : undefined;
    if (!caller) {
      if (opts.allowAnonymous?.(c.req.raw)) return next();
      return c.json(
        {
          errors: [
            {
              message: m ? 'unknown API key' : 'missing API key: send Authorization: Bearer <key>',
              extensions: { code: 'UNAUTHENTICATED' },
            },
          ],
        },
        401,
        { 'WWW-Authenticate': 'Bearer realm="lastunit"' },
      );
    }
    c.set('caller', caller);
    return next();
  };
}
