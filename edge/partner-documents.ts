// Partner apps' published documents as both hosts look them up at call time: by (app, id) in PostgreSQL, kept in this
// process (Node) or isolate (Workers) in a bounded cache. A published version never changes, so a found document
// never goes stale; an unknown id is remembered only briefly, so a version published a moment later is found.
import { LRUCache } from 'lru-cache';
import { CLIENT_NAME, type Caller } from '../common/caller.js';
import { findPartnerDocument, type PartnerDocument } from '../db/partner-documents-store.js';
import type { Db } from '../db/wrap-pool.js';

export type { PartnerDocument };

/** A partner document of `app` by id (null: none), reading `db()` only when the cache does not know the answer. */
export type PartnerDocumentLookup = (db: () => Db, app: string, id: string) => Promise<PartnerDocument | null>;

export type PartnerDocumentCacheOptions = {
  /** most bytes of document text kept (default 4 MiB) */
  maxBytes?: number;
  /** how long a found document is kept (default 1 hour; it cannot change, this only lets memory turn over) */
  ttlMs?: number;
  /** how long an unknown id is remembered (default 5 s): bounds the database lookups a retrying client causes */
  missTtlMs?: number;
};

const ID = /^[0-9a-f]{64}$/;
const MISSING = { missing: true } as const;

/**
 * The app a caller's key names: `partner:<app>:<key>` in API_KEYS. A partner key without an app (`partner:<key>`, whose
 * client id is derived and so never matches CLIENT_NAME) runs the shipped list only; other roles never run partner ids.
 */
export function partnerAppOf(caller: Caller | undefined): string | null {
  return caller?.role === 'partner' && CLIENT_NAME.test(caller.clientId) ? caller.clientId : null;
}

/**
 * A PartnerDocumentLookup with a bounded, expiring cache in front of PostgreSQL; concurrent lookups of one id share
 * one query. Ids that cannot be sha256 hex never reach the database.
 * @example const find = cachedPartnerDocuments(); await find(() => db, 'acme', id)
 */
export function cachedPartnerDocuments(opts: PartnerDocumentCacheOptions = {}): PartnerDocumentLookup {
  const missTtlMs = opts.missTtlMs ?? 5_000;
  const cache = new LRUCache<string, PartnerDocument | typeof MISSING, () => Db>({
    maxSize: opts.maxBytes ?? 4 * 1024 * 1024,
    sizeCalculation: (v) => ('body' in v ? v.body.length + 200 : 100),
    ttl: opts.ttlMs ?? 60 * 60 * 1000,
    fetchMethod: async (key, _stale, { options, context }) => {
      const [app, id] = key.split(' ') as [string, string];
      const doc = await findPartnerDocument(context(), app, id);
      if (doc) return doc;
      options.ttl = Math.max(1, missTtlMs); // 0 would mean forever to lru-cache
      return MISSING;
    },
  });
  return async (db, app, id) => {
    if (!ID.test(id) || !CLIENT_NAME.test(app)) return null;
    const hit = await cache.fetch(`${app} ${id}`, { context: db });
    return hit && 'body' in hit ? hit : null;
  };
}
