// Plain fetch, no GraphQL client: the document is partner-product.graphql, its id the sha256 of that file's bytes
// (`sha256sum partner-product.graphql`); a query goes out as GET /graphql?documentId=...&variables=... (edge-cacheable).

export const PARTNER_PRODUCT_ID = 'a8c5e16d9f410bf386ae7f5bb583ff52e0e4f7317f8a5c6994563176f8b299db';

export type PartnerProduct = {
  sku: string;
  name: string;
  price: { amount: number; currencyCode: string };
  availability: { available: number; soldOut: boolean };
};

export async function fetchPartnerProduct(
  opts: { url: string; partnerKey: string },
  sku: string,
): Promise<PartnerProduct | null> {
  const url = new URL(opts.url);
  url.searchParams.set('documentId', PARTNER_PRODUCT_ID);
  url.searchParams.set('variables', JSON.stringify({ sku }));
  const res = await fetch(url, {
    headers: { authorization: `Bearer ${opts.partnerKey}`, accept: 'application/graphql-response+json' },
  });
  const body = (await res.json()) as {
    data?: { product: PartnerProduct | null };
    errors?: { message: string; extensions?: { code?: string } }[];
  };
  if (body.errors?.length)
    throw new Error(`${res.status} ${body.errors.map((e) => e.extensions?.code ?? e.message).join(', ')}`);
  return body.data!.product;
}
