// Access checks every resolver uses: which roles may run an operation.
import { createGraphQLError } from 'graphql-yoga';
import type { Role } from '../common/caller.js';
import type { Context } from './context.js';

/** Throws a FORBIDDEN fault (HTTP 403) unless the caller's key has one of `roles`. */
export function requireRole(ctx: Context, ...roles: Role[]): void {
  if (!roles.includes(ctx.caller.role)) {
    throw createGraphQLError(`this operation needs a ${roles.join(' or ')} key`, {
      extensions: { code: 'FORBIDDEN', http: { status: 403 } },
    });
  }
}
