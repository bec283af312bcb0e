// Who is calling: the roles an API key can carry and the caller the edge derives from it. Every layer that checks
// access (app, resolvers, graphql-ws) shares these types, so they live on the ground floor.

/**
 * Roles an API key can carry (docs/api.md, "Who may call what"): `public` keys live in browsers (publishable),
 * `storefront` keys on a shop's servers (secret), `partner` keys run persisted operations only, `admin` keys run the shop.
 */
export const ROLES = ['public', 'storefront', 'partner', 'admin'] as const;
export type Role = (typeof ROLES)[number];

/**
 * One configured API key. `client` names the API client the key belongs to (`role:client:key` in API_KEYS): a rotated
 * key of the same client keeps its orders and idempotency keys. Without it the client is derived from the key itself.
 */
export type ApiKey = { role: Role; key: string; client?: string };

/** A client name: lowercase letters, digits, dot and dash (no underscore, so it never looks like a derived id). */
export const CLIENT_NAME = /^[a-z0-9][a-z0-9.-]{0,62}$/;

/**
 * Who is calling: set from the API key before GraphQL runs. `clientId` scopes orders and idempotency keys; `ip` is
 * the client's address as the host sees it (Node: the connection, or X-Forwarded-For under TRUST_PROXY; Workers:
 * cf-connecting-ip), the buyer of a `public` key.
 */
export type Caller = { clientId: string; role: Role; ip?: string };
