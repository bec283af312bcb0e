// Every SQL statement about partner apps' published documents (tables in db/migrations/0006_partner-documents.sql).
import { z } from 'zod';
import type { Db } from './wrap-pool.js';
import { parseRow } from './rows.js';

/** One trusted document of a partner app: its id is the sha256 of `body` (a CHECK constraint holds it so). */
export type PartnerDocument = {
  id: string;
  body: string;
  operationName: string | null;
  operationType: 'query' | 'mutation';
  /** the root fields it selects, so the edge can tell a public read (cacheable) from anything else */
  rootFields: string[];
};

/** A published (app, version): immutable once written. `fingerprint` is the sha256 of its sorted document ids. */
export type PublishedVersion = {
  app: string;
  version: string;
  fingerprint: string;
  documentCount: number;
  publishedAt: Date;
};

const DocumentRow = z.object({
  id: z.string(),
  body: z.string(),
  operation_name: z.string().nullable(),
  operation_type: z.enum(['query', 'mutation']),
  root_fields: z.array(z.string()),
});
type DocumentRow = z.infer<typeof DocumentRow>;
const VersionRow = z.object({
  app: z.string(),
  version: z.string(),
  fingerprint: z.string(),
  documents: z.number(),
  published_at: z.date(),
});
type VersionRow = z.infer<typeof VersionRow>;

const DOCUMENT_COLUMNS = 'id, body, operation_name, operation_type, root_fields';
const VERSION_COLUMNS = 'app, version, fingerprint, documents, published_at';

function toDocument(r: DocumentRow): PartnerDocument {
  return {
    id: r.id,
    body: r.body,
    operationName: r.operation_name,
    operationType: r.operation_type,
    rootFields: r.root_fields,
  };
}

function toVersion(r: VersionRow): PublishedVersion {
  return {
    app: r.app,
    version: r.version,
    fingerprint: r.fingerprint,
    documentCount: r.documents,
    publishedAt: r.published_at,
  };
}

/**
 * Publishes `documents` as (app, version) in one statement: the version row first (`ON CONFLICT DO NOTHING`), its
 * documents only if that row was new. `created: false` gives the version already there (a concurrent twin waits on the
 * primary key and then finds the winner's row), whose fingerprint the caller compares.
 */
export async function publishVersion(
  db: Db,
  v: { app: string; version: string; fingerprint: string; documents: PartnerDocument[] },
): Promise<{ created: boolean; version: PublishedVersion }> {
  const docs = v.documents.map((d) => ({
    id: d.id,
    body: d.body,
    operation_name: d.operationName,
    operation_type: d.operationType,
    root_fields: d.rootFields,
  }));
  const { rows } = await db.run(
    `WITH v AS (
       INSERT INTO partner_app_versions (app, version, fingerprint, documents) VALUES ($1, $2, $3, $4)
       ON CONFLICT (app, version) DO NOTHING
       RETURNING ${VERSION_COLUMNS}),
     d AS (
       INSERT INTO partner_documents (app, version, ${DOCUMENT_COLUMNS})
       SELECT v.app, v.version, x.id, x.body, x.operation_name, x.operation_type, x.root_fields
         FROM v CROSS JOIN jsonb_to_recordset($5::jsonb)
           AS x(id text, body text, operation_name text, operation_type text, root_fields text[]))
     SELECT ${VERSION_COLUMNS} FROM v`,
    [v.app, v.version, v.fingerprint, docs.length, JSON.stringify(docs)],
  );
  if (rows[0]) return { created: true, version: toVersion(parseRow(VersionRow, rows[0], 'the published version')) };
  // A fresh statement (a new snapshot) sees the row that won, even one committed while ours waited on it.
  const existing = await db.query(
    `SELECT ${VERSION_COLUMNS} FROM partner_app_versions WHERE app = $1 AND version = $2`,
    [v.app, v.version],
  );
  if (!existing.rows[0]) throw new Error(`partner version ${v.app}@${v.version} neither inserted nor found`);
  return { created: false, version: toVersion(parseRow(VersionRow, existing.rows[0], 'the published version')) };
}

/** The document `id` of any published version of `app`, or null. */
export async function findPartnerDocument(db: Db, app: string, id: string): Promise<PartnerDocument | null> {
  const { rows } = await db.query(
    `SELECT ${DOCUMENT_COLUMNS} FROM partner_documents WHERE app = $1 AND id = $2 LIMIT 1`,
    [app, id],
  );
  return rows[0] ? toDocument(parseRow(DocumentRow, rows[0], 'the partner document')) : null;
}
