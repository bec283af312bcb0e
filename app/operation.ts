// Which operation a GraphQL request names, decided in one place for every reader of the request (the request guard
// below, the edge cache, Yoga's persisted-operations plugin), so none of them can pick a different one than another.
import type { MiddlewareHandler } from 'hono';
import { sha256Hex } from '../common/hash.js';
import { graphqlBodyOf } from './request-guards.js';

type Params = { query?: unknown; extensions?: unknown; documentId?: unknown };

/** `sha256:<hex>` (the persisted-documents convention GraphQL Codegen follows) names the same id as `<hex>`. */
const bare = (id: string) => (id.startsWith('sha256:') ? id.slice(7) : id);

const hashOf = (extensions: unknown): string | null => {
  const h = (extensions as { persistedQuery?: { sha256Hash?: unknown } } | null | undefined)?.persistedQuery
    ?.sha256Hash;
  return typeof h === 'string' ? h : null;
};

/**
 * Every operation a request names: the persisted ids (`extensions.persistedQuery.sha256Hash` and `documentId`, in the
 * body or the query string, without a `sha256:` prefix) and the document (`query`, body or query string), if any.
 * @example namedOperations({ documentId: 'abc' }, new URL(req.url)) // { ids: ['abc'], query: null }
 */
export function namedOperations(params: Params, url?: URL): { ids: string[]; query: string | null } {
  const ids = new Set<string>();
  const add = (v: unknown) => typeof v === 'string' && v !== '' && ids.add(bare(v));
  add(hashOf(params.extensions));
  add(params.documentId);
  add(url?.searchParams.get('documentId'));
  const ext = url?.searchParams.get('extensions');
  if (ext) {
    try {
      add(hashOf(JSON.parse(ext)));
    } catch {
      // not JSON: Yoga refuses it itself
    }
  }
  const query =
    typeof params.query === 'string' && params.query !== ''
      ? params.query
      : (url?.searchParams.get('query') ?? null) || null;
  return { ids: [...ids], query };
}

/**
 * The persisted operation id a request names, or null. A request naming two (see ambiguousOperation) never gets here:
 * the request guard has refused it.
 * @example operationIdOf({}, new URL(req.url))
 */
export function operationIdOf(params: Params, url?: URL): string | null {
  return namedOperations(params, url).ids[0] ?? null;
}

/**
 * Why a request names two different operations, or null: two different ids, or a document whose sha256 is not the
 * id it also names. (A document with its own id, as Apollo's and urql's persisted-query links resend it after an
 * unknown id, names one operation.)
 */
export async function ambiguousOperation(params: Params, url?: URL): Promise<string | null> {
  const { ids, query } = namedOperations(params, url);
  if (ids.length > 1)
    return 'the request names two different persisted operations (documentId and extensions.persistedQuery.sha256Hash differ)';
  if (ids.length === 1 && query !== null && (await sha256Hex(query)) !== ids[0])
    return 'the request names a persisted operation and a different document: send one or the other';
  return null;
}

/**
 * Refuses, with 400 AMBIGUOUS_OPERATION, a request that names two different operations, before the edge cache or Yoga
 * see it: one would otherwise key or run another than the other, and a cached answer could belong to neither.
 * @example app.use('/graphql', refuseAmbiguousOperations())
 */
export function refuseAmbiguousOperations(): MiddlewareHandler {
  return async function refuseAmbiguousOperations(c, next) {
    const url = c.req.url.includes('?') ? new URL(c.req.url) : undefined; // a URL object only when there is a query string
    const body = await graphqlBodyOf(c);
    const value = body?.json.ok ? body.json.value : undefined; // not JSON: Yoga answers it
    const params: Params = value && typeof value === 'object' && !Array.isArray(value) ? (value as Params) : {};
    const why = await ambiguousOperation(params, url);
    if (why) return c.json({ errors: [{ message: why, extensions: { code: 'AMBIGUOUS_OPERATION' } }] }, 400);
    return next();
  };
}
