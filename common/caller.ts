// Who is calling: the roles an API key can carry and the caller the edge derives from it. Every layer that checks
// access (app, resolvers, graphql-ws) shares these types, so they live on the ground floor.

/** Roles an API key can carry (docs/api.md, "Who may call what"). */
export const ROLES = ['storefront', 'partner', 'admin'] as const;
export type Role = (typeof ROLES)[number];

/** One configured API key. */
export type ApiKey = { role: Role; key: string };

/** Who is calling: set from the API key before GraphQL runs. `clientId` scopes orders and idempotency keys. */
export type Caller = { clientId: string; role: Role };
