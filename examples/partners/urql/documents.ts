// The documents exactly as urql sends them (cacheExchange adds __typename, then persistedExchange hashes urql's print),
// keyed by that sha256: `npx tsx examples/partners/urql/documents.ts` writes persisted-documents.json to publish.
import { createHash } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import path from 'node:path';
import { formatDocument, stringifyDocument } from '@urql/core';
import { PARTNER_PRODUCT } from './operations.js';

export function urqlDocuments(): Record<string, string> {
  const out: Record<string, string> = {};
  for (const doc of [PARTNER_PRODUCT]) {
    const body = stringifyDocument(formatDocument(doc));
    out[createHash('sha256').update(body).digest('hex')] = body;
  }
  return out;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  writeFileSync(
    path.join(path.dirname(fileURLToPath(import.meta.url)), 'persisted-documents.json'),
    `${JSON.stringify(urqlDocuments(), null, 2)}\n`,
  );
}
