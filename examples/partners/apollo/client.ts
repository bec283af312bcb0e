// Apollo Client 4 with @apollo/persisted-query-lists: every operation goes out as the id that
// generate-persisted-query-manifest wrote for it, never as a document (docs/partners.md).
import { ApolloClient, HttpLink, InMemoryCache } from '@apollo/client';
import { PersistedQueryLink } from '@apollo/client/link/persisted-queries';
import { generatePersistedQueryIdsFromManifest } from '@apollo/persisted-query-lists';
import type { PersistedQueryManifest } from '@apollo/generate-persisted-query-manifest';

/** An Apollo Client that sends the ids of `manifest` with a partner key; queries by GET, so the edge can cache them. */
export function createPartnerClient(opts: { url: string; partnerKey: string; manifest: PersistedQueryManifest }) {
  const persisted = new PersistedQueryLink({
    ...generatePersistedQueryIdsFromManifest({ loadManifest: () => opts.manifest }),
    useGETForHashedQueries: true,
  });
  const http = new HttpLink({ uri: opts.url, headers: { authorization: `Bearer ${opts.partnerKey}` } });
  return new ApolloClient({ cache: new InMemoryCache(), link: persisted.concat(http) });
}
