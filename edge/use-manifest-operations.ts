import { usePersistedOperations } from '@graphql-yoga/plugin-persisted-operations';
import type { Plugin } from 'graphql-yoga';
import type { RequestParty } from '../app/app.js';
import type { Role } from '../common/caller.js';
import { operationIdOf, shippedManifest, type PersistedManifest } from './persisted-manifest.js';
import { partnerAppOf, type PartnerDocumentLookup } from './partner-documents.js';

export const PERSISTED_CODES = {
  notFound: 'PERSISTED_QUERY_NOT_FOUND',
  only: 'PERSISTED_QUERY_ONLY',
  idRequired: 'PERSISTED_QUERY_ID_REQUIRED',
} as const;

/**
 * The message Apollo Client's persisted-query link and urql's persistedExchange both recognise as "unknown id" (urql
 * matches the message only, Apollo the message or the code): they then resend the operation with its document.
 */
export const NOT_FOUND_MESSAGE = 'PersistedQueryNotFound';

/**
 * Persisted operations by sha256 id (APQ `extensions.persistedQuery.sha256Hash` or `documentId`): the shipped manifest
 * for every role, plus, for a partner key naming its app (`partner:<app>:<key>`), that app's published documents
 * (docs/partners.md). Roles in `documentsAllowed` (default: public, storefront, admin) may also send documents; every
 * other role (partners) runs ids only. A public key's documents meet the same limits and role checks as any other.
 * @example useManifestOperations({ partyOf: (req) => parties.get(req), partnerDocuments: cachedPartnerDocuments() })
 */
export function useManifestOperations(options: {
  partyOf: (request: Request) => RequestParty | undefined;
  manifest?: PersistedManifest;
  documentsAllowed?: Role[];
  /** partner apps' published documents (edge/partner-documents.ts); absent: the shipped manifest only */
  partnerDocuments?: PartnerDocumentLookup;
}): Plugin {
  const manifest = options.manifest ?? shippedManifest;
  const documentsAllowed = new Set(options.documentsAllowed ?? ['public', 'storefront', 'admin']);
  const partnerDocuments = options.partnerDocuments;
  return usePersistedOperations({
    getPersistedOperation: async (id, request) => {
      const shipped = manifest.operations[id];
      if (shipped) return shipped.document;
      const party = options.partyOf(request);
      const app = partnerAppOf(party?.caller);
      if (!party || !app || !partnerDocuments) return null;
      return (await partnerDocuments(party.db, app, id))?.body ?? null;
    },
    allowArbitraryOperations: (request) => {
      const role = options.partyOf(request)?.caller.role;
      return !!role && documentsAllowed.has(role);
    },
    extractPersistedOperationId: (params, request) =>
      operationIdOf(params as { extensions?: unknown }, new URL(request.url)),
    customErrors: {
      notFound: {
        message: NOT_FOUND_MESSAGE,
        extensions: { code: PERSISTED_CODES.notFound, http: { status: 404 } },
      },
      persistedQueryOnly: {
        message:
          'this API key may run persisted operations only: send extensions.persistedQuery.sha256Hash (or documentId), not a document',
        extensions: { code: PERSISTED_CODES.only, http: { status: 403 } },
      },
      keyNotFound: {
        message:
          'send a document in `query`, or a persisted operation id in extensions.persistedQuery.sha256Hash or documentId',
        extensions: { code: PERSISTED_CODES.idRequired, http: { status: 400 } },
      },
    },
  }) as Plugin;
}
