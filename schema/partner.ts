// Partner apps' trusted documents: the admin mutation that publishes a version of them (docs/partners.md).
import { builder } from './builder.js';
import { UserError } from './common.js';
import type { Publication as PublicationShape } from '../orders/partner-documents.js';
import * as r from '../resolvers/partners.js';

const PartnerDocumentInput = builder.inputType('PartnerDocumentInput', {
  description: 'One trusted document of a partner app, as its tooling printed it.',
  fields: (t) => ({
    id: t.string({
      required: true,
      description: 'The sha256 of `body`, 64 lowercase hex digits: the id the client sends.',
    }),
    body: t.string({
      required: true,
      description: 'The document, exactly as hashed: one operation (query or mutation) and its fragments.',
    }),
  }),
});

const PublishPartnerDocumentsInput = builder.inputType('PublishPartnerDocumentsInput', {
  description:
    "A version of a partner app's documents. Apollo's persisted query manifest maps onto it as is (id, body).",
  fields: (t) => ({
    app: t.string({
      required: true,
      description: 'The app: the client name of its partner keys (`partner:<app>:<key>` in API_KEYS).',
    }),
    version: t.string({
      required: true,
      description: 'The app version these documents ship in, e.g. 1.4.0 or a commit sha; immutable once published.',
    }),
    documents: t.field({ type: [PartnerDocumentInput], required: true, description: '1 to 1000 documents.' }),
  }),
});

const PartnerDocumentsPublication = builder.objectRef<PublicationShape>('PartnerDocumentsPublication').implement({
  description: "A published version of a partner app's documents. Every published version of an app stays callable.",
  fields: (t) => ({
    app: t.exposeString('app', { description: 'The app.' }),
    version: t.exposeString('version', { description: 'The version.' }),
    documentCount: t.exposeInt('documentCount', { description: 'Distinct documents in this version.' }),
    publishedAt: t.field({
      type: 'DateTime',
      description: 'When this version was first published.',
      resolve: (p) => p.publishedAt,
    }),
    replayed: t.exposeBoolean('replayed', {
      description: 'True when this version had already been published with the same documents.',
    }),
  }),
});

const PublishPartnerDocumentsPayload = builder
  .objectRef<Awaited<ReturnType<typeof r.publishPartnerDocuments>>>('PublishPartnerDocumentsPayload')
  .implement({
    fields: (t) => ({
      publication: t.field({
        type: PartnerDocumentsPublication,
        nullable: true,
        description: 'The published version; null when refused.',
        resolve: (p) => p.publication,
      }),
      userErrors: t.field({
        type: [UserError],
        description:
          'Why nothing was published: one entry per bad document (field ["input","documents","<n>","id"|"body"]), or VERSION_ALREADY_PUBLISHED.',
        resolve: (p) => p.userErrors,
      }),
    }),
  });

builder.mutationFields((t) => ({
  publishPartnerDocuments: t.field({
    type: PublishPartnerDocumentsPayload,
    description:
      "Admin: publish a version of a partner app's trusted documents. Each is parsed, validated against the schema and the query limits; one bad document refuses the whole version. Partner keys of the app may then run them by id.",
    args: { input: t.arg({ type: PublishPartnerDocumentsInput, required: true }) },
    resolve: (_root, { input }, ctx) => r.publishPartnerDocuments(ctx, input),
  }),
}));
