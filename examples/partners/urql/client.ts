// urql with @urql/exchange-persisted: queries go out as the sha256 of the document urql prints, by GET, and never as a
// document (enforcePersistedQueries), which is all a partner key may send (docs/partners.md).
import { Client, cacheExchange, fetchExchange } from '@urql/core';
import { persistedExchange } from '@urql/exchange-persisted';

export function createPartnerClient(opts: { url: string; partnerKey: string }) {
  return new Client({
    url: opts.url,
    exchanges: [
      cacheExchange,
      persistedExchange({ enforcePersistedQueries: true, preferGetForPersistedQueries: true }),
      fetchExchange,
    ],
    fetchOptions: { headers: { authorization: `Bearer ${opts.partnerKey}` } },
  });
}
