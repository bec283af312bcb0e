// Domain errors as the API's UserError: the code as is, the domain's input path under the operation's `input` argument.
import type { DomainError, ErrorCode } from '../orders/errors.js';

/** What GraphQL's UserError type resolves from. */
export type UserErrorShape = { code: ErrorCode; field: string[] | null; message: string; sku: string | null };

/**
 * One domain error as a UserError; `path` ['lines', '0'] becomes `field` ['input', 'lines', '0'].
 * @example toUserError(refuse('NOT_FOUND', 'no such order', ['orderId']))  // field: ['input', 'orderId']
 */
export function toUserError(e: DomainError, argument = 'input'): UserErrorShape {
  return { code: e.code, field: e.path ? [argument, ...e.path] : null, message: e.message, sku: e.sku ?? null };
}

/** The userErrors of a domain answer: none when it succeeded. */
export const userErrorsOf = (r: { ok: true } | { ok: false; errors: DomainError[] }): UserErrorShape[] =>
  r.ok ? [] : r.errors.map((e) => toUserError(e));
