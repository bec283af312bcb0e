import manifestJson from './persisted-operations.json' with { type: 'json' };

/** The persisted operations the project ships (built by `npm run persisted:build` from edge/operations/). */
export type PersistedManifest = {
  version: 1;
  operations: Record<string, { name: string; type: 'query' | 'mutation' | 'subscription'; cacheable: boolean; document: string }>;
};
export type PersistedOperation = PersistedManifest['operations'][string];

export const shippedManifest = manifestJson as PersistedManifest;

/** Root fields that read only public data: a query made of these alone may be cached at the edge. */
export const PUBLIC_ROOT_FIELDS = new Set(['product', 'products']);

/** True for a query whose every root field reads public data: the same answer for every caller, so cacheable. */
export const isPublicRead = (type: string, rootFields: string[]) =>
  type === 'query' && rootFields.length > 0 && rootFields.every((f) => PUBLIC_ROOT_FIELDS.has(f));

/** Apollo's persisted query manifest (`@apollo/generate-persisted-query-manifest`, read by `@apollo/persisted-query-lists`). */
export type ApolloManifest = {
  format: 'apollo-persisted-query-manifest';
  version: 1;
  operations: { id: string; name: string; type: 'query' | 'mutation' | 'subscription'; body: string }[];
};

/**
 * The shipped manifest in Apollo's format (edge/persisted-query-manifest.json): the same ids and bodies, by name.
 * @example toApolloManifest(shippedManifest).operations[0] // { id, name: 'Order', type: 'query', body }
 */
export function toApolloManifest(m: PersistedManifest): ApolloManifest {
  const operations = Object.entries(m.operations)
    .map(([id, op]) => ({ id, name: op.name, type: op.type, body: op.document }))
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return { format: 'apollo-persisted-query-manifest', version: 1, operations };
}

/** `sha256:<hex>` (the persisted-documents convention GraphQL Codegen follows) names the same id as `<hex>`. */
const bare = (id: string | null) => (id?.startsWith('sha256:') ? id.slice(7) : id);

/**
 * The persisted operation id of a request: `extensions.persistedQuery.sha256Hash` (APQ form, body or GET query string),
 * or `documentId` (GET query string or body), without a `sha256:` prefix. Null when the request names none.
 * @example operationIdOf(new URL(req.url).searchParams, body)
 */
export function operationIdOf(params: { extensions?: unknown; documentId?: unknown }, url?: URL): string | null {
  return bare(namedId(params, url));
}

function namedId(params: { extensions?: unknown; documentId?: unknown }, url?: URL): string | null {
  const pq = (params.extensions as { persistedQuery?: { sha256Hash?: unknown } } | undefined)?.persistedQuery;
  if (pq && typeof pq.sha256Hash === 'string') return pq.sha256Hash;
  if (typeof params.documentId === 'string') return params.documentId;
  const fromUrl = url?.searchParams.get('documentId');
  if (fromUrl) return fromUrl;
  const ext = url?.searchParams.get('extensions');
  if (ext) {
    try {
      const h = JSON.parse(ext)?.persistedQuery?.sha256Hash;
      if (typeof h === 'string') return h;
    } catch {
      return null;
    }
  }
  return null;
}
