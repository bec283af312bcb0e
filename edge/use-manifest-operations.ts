import { usePersistedOperations } from '@graphql-yoga/plugin-persisted-operations';
import type { Plugin } from 'graphql-yoga';
import type { Role } from '../common/caller.js';
import { operationIdOf, shippedManifest, type PersistedManifest } from './persisted-manifest.js';

export const PERSISTED_CODES = {
  notFound: 'PERSISTED_QUERY_NOT_FOUND',
  only: 'PERSISTED_QUERY_ONLY',
  idRequired: 'PERSISTED_QUERY_ID_REQUIRED',
} as const;

/**
 * Persisted operations from the shipped manifest, by sha256 id (APQ `extensions.persistedQuery.sha256Hash` or
 * `documentId`). Roles in `documentsAllowed` may also send documents; every other role (partners) runs manifest
 * operations only.
 * @example useManifestOperations({ roleOf: (req) => roles.get(req) })
 */
export function useManifestOperations(options: {
  roleOf: (request: Request) => Role | undefined;
  manifest?: PersistedManifest;
  documentsAllowed?: Role[];
}): Plugin {
  const manifest = options.manifest ?? shippedManifest;
  const documentsAllowed = new Set(options.documentsAllowed ?? ['storefront', 'admin']);
  return usePersistedOperations({
    getPersistedOperation: (id) => manifest.operations[id]?.document ?? null,
    allowArbitraryOperations: (request) => {
      const role = options.roleOf(request);
      return !!role && documentsAllowed.has(role);
    },
    extractPersistedOperationId: (params, request) => operationIdOf(params as { extensions?: unknown }, new URL(request.url)),
    customErrors: {
      notFound: {
        message: 'unknown persisted operation id: run `npm run persisted:build` and use an id from edge/persisted-operations.json',
        extensions: { code: PERSISTED_CODES.notFound, http: { status: 404 } },
      },
      persistedQueryOnly: {
        message: 'this API key may run persisted operations only: send extensions.persistedQuery.sha256Hash (or documentId), not a document',
        extensions: { code: PERSISTED_CODES.only, http: { status: 403 } },
      },
      keyNotFound: {
        message: 'send a document in `query`, or a persisted operation id in extensions.persistedQuery.sha256Hash or documentId',
        extensions: { code: PERSISTED_CODES.idRequired, http: { status: 400 } },
      },
    },
  }) as Plugin;
}
