// What `npm run partner:publish` does: read a manifest as a client's tooling writes it and publish it through the admin
// API as one version of a partner app (docs/partners.md). A partner's CI runs it before shipping the app.

export const PUBLISH_PARTNER_DOCUMENTS = `mutation PublishPartnerDocuments($input: PublishPartnerDocumentsInput!) {
  publishPartnerDocuments(input: $input) {
    publication { app version documentCount publishedAt replayed }
    userErrors { code field message }
  }
}`;

export type ManifestDocument = { id: string; body: string };
export type Publication = {
  app: string;
  version: string;
  documentCount: number;
  publishedAt: string;
  replayed: boolean;
};

/** The server refused the version (userErrors) or the request; the message says why, so no stack is printed. */
export class PublishRefused extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'PublishRefused';
    this.stack = `${this.name}: ${message}`;
  }
}

const isRecord = (v: unknown): v is Record<string, unknown> => !!v && typeof v === 'object' && !Array.isArray(v);

/**
 * The documents of a manifest: Apollo's persisted query manifest (`generate-persisted-query-manifest`,
 * `{ format: "apollo-persisted-query-manifest", operations: [{ id, body, ... }] }`, this project's
 * edge/persisted-query-manifest.json too) or GraphQL Codegen's `persisted-documents.json` (`{ "<id>": "<body>" }`).
 * Ids and bodies are passed on exactly as written: the server checks that each id is the sha256 of its body.
 * @example documentsOfManifest(JSON.parse(readFileSync('persisted-query-manifest.json', 'utf8')))
 */
export function documentsOfManifest(json: unknown): ManifestDocument[] {
  if (isRecord(json) && json.format === 'apollo-persisted-query-manifest') {
    if (json.version !== 1 || !Array.isArray(json.operations))
      throw new PublishRefused('an Apollo manifest of version 1 with an operations array is expected');
    return json.operations.map((op: unknown, i) => {
      if (!isRecord(op) || typeof op.id !== 'string' || typeof op.body !== 'string')
        throw new PublishRefused(`operations[${i}] has no string id and body`);
      return { id: op.id, body: op.body };
    });
  }
  if (isRecord(json) && Object.keys(json).length > 0 && Object.values(json).every((v) => typeof v === 'string'))
    return Object.entries(json).map(([id, body]) => ({ id, body: body as string }));
  throw new PublishRefused(
    "not a manifest: expected Apollo's persisted query manifest or GraphQL Codegen's persisted-documents.json",
  );
}

/**
 * Publishes `documents` as `app`@`version` through the admin API at `url` (the /graphql endpoint). Resolves with the
 * publication (`replayed` when the same version had already been published with the same documents); a refusal
 * rejects with PublishRefused listing every userError.
 */
export async function publishDocuments(opts: {
  url: string;
  adminKey: string;
  app: string;
  version: string;
  documents: ManifestDocument[];
  fetch?: typeof fetch;
}): Promise<Publication> {
  const res = await (opts.fetch ?? fetch)(opts.url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/graphql-response+json, application/json',
      authorization: `Bearer ${opts.adminKey}`,
    },
    body: JSON.stringify({
      query: PUBLISH_PARTNER_DOCUMENTS,
      variables: { input: { app: opts.app, version: opts.version, documents: opts.documents } },
    }),
  });
  const text = await res.text();
  let body: {
    data?: {
      publishPartnerDocuments?: {
        publication: Publication | null;
        userErrors: { code: string; field: string[] | null; message: string }[];
      };
    };
    errors?: { message: string; extensions?: { code?: string } }[];
  };
  try {
    body = JSON.parse(text);
  } catch {
    throw new PublishRefused(`${opts.url} answered ${res.status} without GraphQL JSON: ${text.slice(0, 200)}`);
  }
  if (body.errors?.length) {
    const why = body.errors.map((e) => `${e.extensions?.code ?? 'ERROR'}: ${e.message}`).join('\n  ');
    const hint = body.errors.some((e) => e.extensions?.code === 'PAYLOAD_TOO_LARGE')
      ? "\n  (the manifest is larger than the server's MAX_BODY_BYTES)"
      : '';
    throw new PublishRefused(`${opts.url} answered ${res.status}:\n  ${why}${hint}`);
  }
  const payload = body.data?.publishPartnerDocuments;
  if (!payload)
    throw new PublishRefused(`${opts.url} answered ${res.status} without a publishPartnerDocuments payload`);
  if (payload.userErrors.length || !payload.publication) {
    const lines = payload.userErrors.map((e) => `${e.code}${e.field ? ` at ${e.field.join('.')}` : ''}: ${e.message}`);
    throw new PublishRefused(
      `${opts.app}@${opts.version} was not published (nothing was stored):\n  ${lines.join('\n  ')}`,
    );
  }
  return payload.publication;
}
