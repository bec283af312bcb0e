// Requests for the shipped persisted operations, by name: what tests and the edge bench send instead of query text.
import { shippedManifest } from '../edge/persisted-manifest.js';

/** The manifest id of a shipped operation, by its name. */
export function operationId(name: string): string {
  const e = Object.entries(shippedManifest.operations).find(([, op]) => op.name === name);
  if (!e) throw new Error(`no persisted operation named ${name}`);
  return e[0];
}

/** A request running a persisted operation by id: GET with the APQ extension for queries, POST otherwise. */
export function persistedRequest(
  name: string,
  variables: Record<string, unknown>,
  key: string | null,
  method?: 'GET' | 'POST',
  base = 'http://localhost',
) {
  const id = operationId(name);
  const op = shippedManifest.operations[id]!;
  const extensions = { persistedQuery: { version: 1, sha256Hash: id } };
  const headers: Record<string, string> = {
    accept: 'application/graphql-response+json, application/json',
    ...(key ? { authorization: `Bearer ${key}` } : {}),
  };
  if ((method ?? (op.type === 'query' ? 'GET' : 'POST')) === 'GET') {
    const qs = new URLSearchParams({ variables: JSON.stringify(variables), extensions: JSON.stringify(extensions) });
    return new Request(`${base}/graphql?${qs}`, { headers });
  }
  return new Request(`${base}/graphql`, {
    method: 'POST',
    headers: { ...headers, 'content-type': 'application/json' },
    body: JSON.stringify({ variables, extensions }),
  });
}
