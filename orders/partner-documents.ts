// Partner apps publish their own trusted documents: every document is checked before anything is stored, and a
// published (app, version) never changes (docs/partners.md).
import { CLIENT_NAME } from '../common/caller.js';
import { sha256Hex } from '../common/hash.js';
import * as store from '../db/partner-documents-store.js';
import type { PartnerDocument } from '../db/partner-documents-store.js';
import type { Db } from '../db/wrap-pool.js';
import { failed, refuse, type DomainError, type Result } from './errors.js';

/**
 * What the host's check (app/document-check.ts: the schema and the call-time query limits) says of one body: the one
 * operation it holds, or why it is refused. `name` is given when the body parses, so a refusal can name it.
 */
export type DocumentVerdict =
  | { ok: true; name: string | null; type: 'query' | 'mutation' | 'subscription'; rootFields: string[] }
  | { ok: false; name?: string | null; reason: string };
export type DocumentCheck = (body: string) => DocumentVerdict;

export type Publication = { app: string; version: string; documentCount: number; publishedAt: Date; replayed: boolean };

export const MAX_DOCUMENTS_PER_VERSION = 1_000;
const VERSION = /^[A-Za-z0-9][A-Za-z0-9._+-]{0,63}$/;
/** 64 lowercase hex digits, bare or as GraphQL Codegen writes them (`sha256:<hex>`, the persisted-documents convention). */
const ID = /^(?:sha256:)?([0-9a-f]{64})$/;

/** Partner apps' documents: publish a version (all or nothing). */
export function createPartnerDocuments({ db, checkDocument }: { db: Db; checkDocument: DocumentCheck }) {
  /** The document at `i` ready to store, or why not: the id must be the sha256 of the body, the body must pass the check. */
  async function examine(d: { id: string; body: string }, i: number): Promise<PartnerDocument | DomainError> {
    const at = ['documents', String(i)];
    const hex = ID.exec(d.id)?.[1];
    if (!hex)
      return refuse(
        'INVALID_INPUT',
        `document ${i}: the id must be the sha256 of the body, 64 lowercase hex digits (optionally prefixed sha256:)`,
        [...at, 'id'],
      );
    const actual = await sha256Hex(d.body);
    if (actual !== hex)
      return refuse(
        'INVALID_INPUT',
        `document ${i} (id ${d.id}): the id is not the sha256 of the body (${actual} is); publish each body exactly as your tooling printed and hashed it`,
        [...at, 'id'],
      );
    const verdict = checkDocument(d.body);
    const label = `document ${i}${verdict.name ? ` ${verdict.name}` : ''} (id ${d.id})`;
    if (!verdict.ok) return refuse('INVALID_INPUT', `${label}: ${verdict.reason}`, [...at, 'body']);
    if (verdict.type === 'subscription')
      return refuse(
        'INVALID_INPUT',
        `${label}: subscriptions are not run by id; subscribe over graphql-ws on the Node host`,
        [...at, 'body'],
      );
    return {
      id: hex,
      body: d.body,
      operationName: verdict.name,
      operationType: verdict.type,
      rootFields: verdict.rootFields,
    };
  }

  return {
    /**
     * Publishes `documents` as `app`@`version`. Refused as a whole (nothing stored) when any document fails; the same
     * version again with the same documents answers the first publication (`replayed`), with others VERSION_ALREADY_PUBLISHED.
     */
    async publish(input: {
      app: string;
      version: string;
      documents: { id: string; body: string }[];
    }): Promise<Result<Publication>> {
      const errors: DomainError[] = [];
      if (!CLIENT_NAME.test(input.app))
        errors.push(
          refuse(
            'INVALID_INPUT',
            'app must be the client name of its partner keys (partner:<app>:<key>): 1-63 lowercase letters, digits, dot or dash',
            ['app'],
          ),
        );
      if (!VERSION.test(input.version))
        errors.push(
          refuse(
            'INVALID_INPUT',
            'version must be 1-64 letters, digits, dot, dash, underscore or plus (e.g. 1.4.0 or a commit sha)',
            ['version'],
          ),
        );
      if (input.documents.length === 0 || input.documents.length > MAX_DOCUMENTS_PER_VERSION)
        errors.push(
          refuse('INVALID_INPUT', `a version holds 1 to ${MAX_DOCUMENTS_PER_VERSION} documents`, ['documents']),
        );
      if (errors.length) return { ok: false, errors };

      const byId = new Map<string, PartnerDocument>();
      for (const [i, d] of input.documents.entries()) {
        const r = await examine(d, i);
        if ('code' in r) errors.push(r);
        else byId.set(r.id, r); // the same id twice is the same body twice
      }
      if (errors.length) return { ok: false, errors };

      const documents = [...byId.values()].sort((a, b) => (a.id < b.id ? -1 : 1));
      const fingerprint = await sha256Hex(documents.map((d) => d.id).join('\n'));
      const r = await store.publishVersion(db, { app: input.app, version: input.version, fingerprint, documents });
      if (!r.created && r.version.fingerprint !== fingerprint)
        return failed(
          'VERSION_ALREADY_PUBLISHED',
          `${input.app}@${input.version} was published at ${r.version.publishedAt.toISOString()} with other documents; a published version never changes: publish these as a new version`,
          ['version'],
        );
      const v = r.version;
      return {
        ok: true,
        value: {
          app: v.app,
          version: v.version,
          documentCount: v.documentCount,
          publishedAt: v.publishedAt,
          replayed: !r.created,
        },
      };
    },
  };
}
export type PartnerDocuments = ReturnType<typeof createPartnerDocuments>;
