import manifestJson from './persisted-operations.json' with { type: 'json' };

/** The persisted operations the project ships (built by `npm run persisted:build` from edge/operations/). */
export type PersistedManifest = {
  version: 1;
  operations: Record<string, { name: string; type: 'query' | 'mutation' | 'subscription'; cacheable: boolean; document: string }>;
};
export type PersistedOperation = PersistedManifest['operations'][string];

export const shippedManifest = manifestJson as PersistedManifest;

/**
 * The persisted operation id of a request: `extensions.persistedQuery.sha256Hash` (APQ form, body or GET query string),
 * or `documentId` (GET query string or body). Null when the request names none.
 * @example operationIdOf(new URL(req.url).searchParams, body)
 */
export function operationIdOf(params: { extensions?: unknown; documentId?: unknown }, url?: URL): string | null {
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
