import manifestJson from './persisted-operations.json' with { type: 'json' };

/** The persisted operations the project ships (built by `npm run persisted:build` from edge/operations/). */
export type PersistedManifest = {
  version: 1;
  operations: Record<
    string,
    { name: string; type: 'query' | 'mutation' | 'subscription'; cacheable: boolean; document: string }
  >;
};
export type PersistedOperation = PersistedManifest['operations'][string];

export const shippedManifest = manifestJson as PersistedManifest;

/** Root fields that read only public data: a query made of these alone may be cached at the edge. */
export const PUBLIC_ROOT_FIELDS = new Set(['product', 'products']);

/** True for a query whose every root field reads public data: the same answer for every caller, so cacheable. */
export const isPublicRead = (type: string, rootFields: string[]) =>
  type === 'query' && rootFields.length > 0 && rootFields.every((f) => PUBLIC_ROOT_FIELDS.has(f));

/** Apollo's persisted query manifest (`@apollo/generate-persisted-query-manifest`, read by `@apollo/persisted-query-lists`). */
export type ApolloManifest = {
  format: 'apollo-persisted-query-manifest';
  version: 1;
  operations: { id: string; name: string; type: 'query' | 'mutation' | 'subscription'; body: string }[];
};

/**
 * The shipped manifest in Apollo's format (edge/persisted-query-manifest.json): the same ids and bodies, by name.
 * @example toApolloManifest(shippedManifest).operations[0] // { id, name: 'Order', type: 'query', body }
 */
export function toApolloManifest(m: PersistedManifest): ApolloManifest {
  const operations = Object.entries(m.operations)
    .map(([id, op]) => ({ id, name: op.name, type: op.type, body: op.document }))
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return { format: 'apollo-persisted-query-manifest', version: 1, operations };
}

/**
 * The persisted operation id of a request, decided where every reader decides it (app/operation.ts): the edge cache
 * keys by the same id Yoga runs.
 */
export { operationIdOf } from '../app/operation.js';
