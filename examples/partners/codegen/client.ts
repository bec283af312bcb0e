// GraphQL Codegen's client preset with persisted documents: each typed document carries its hash (`__meta__.hash`,
// "sha256:<hex>"), and the request sends only that as `documentId` (docs/partners.md).
import type { TypedDocumentNode } from '@graphql-typed-document-node/core';

export async function executePersisted<Result, Variables>(
  opts: { url: string; partnerKey: string },
  document: TypedDocumentNode<Result, Variables>,
  variables: Variables,
): Promise<Result> {
  const documentId = (document as { __meta__?: { hash?: string } }).__meta__?.hash;
  if (!documentId) throw new Error('this document has no persisted hash: run graphql-codegen with persistedDocuments');
  const res = await fetch(opts.url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/graphql-response+json',
      authorization: `Bearer ${opts.partnerKey}`,
    },
    body: JSON.stringify({ documentId, variables }),
  });
  const body = (await res.json()) as { data?: Result; errors?: { message: string; extensions?: { code?: string } }[] };
  if (body.errors?.length)
    throw new Error(`${res.status} ${body.errors.map((e) => e.extensions?.code ?? e.message).join(', ')}`);
  return body.data!;
}
