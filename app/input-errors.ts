// Invalid input is the caller's mistake, not the server's: answered as such (400 BAD_USER_INPUT, naming what was wrong
// with it) and logged at warn, one line, no stack (an error-level stack per request would bury real faults and let
// anyone flood the error log). Validation catches it first where it can (orders/rules.ts, resolvers/catalog.ts,
// orders/pages.ts); this is the net for input only the database refuses.
import { createGraphQLError, maskError, type YogaLogger } from 'graphql-yoga';
import { invalidInputCode, invalidInputMessage } from '../common/invalid-input.js';
import { isDatabaseBusy, isDatabaseUnavailable } from '../db/retry.js';

/** Seconds a client is told to wait before sending the same request (same idempotency key) again. */
export const DATABASE_UNAVAILABLE_RETRY_AFTER_S = 1;

/** The error itself or any error it wraps (GraphQL errors carry the thrown one as originalError). */
function causes(error: unknown): unknown[] {
  const out: unknown[] = [];
  for (let e = error, i = 0; e && i < 5; i++) {
    out.push(e);
    e = (e as { originalError?: unknown }).originalError;
  }
  return out;
}

/**
 * A database that cannot be reached (or took no writes) right now, as a GraphQL error a client can tell from a fault:
 * code DATABASE_UNAVAILABLE, retryable, HTTP 503 with Retry-After. Sending the same request again with the same
 * idempotency key replays the order if it was placed, so a retry never makes a second one (docs/deploy.md).
 */
export function databaseUnavailableError(
  path?: readonly (string | number)[],
  reason: 'unavailable' | 'busy' = 'unavailable',
) {
  const why = reason === 'busy' ? 'is too busy for this request right now' : 'is unavailable';
  return createGraphQLError(`The database ${why}; send the same request again (same idempotency key).`, {
    path,
    extensions: {
      code: 'DATABASE_UNAVAILABLE',
      retryable: true,
      http: { status: 503, headers: { 'Retry-After': String(DATABASE_UNAVAILABLE_RETRY_AFTER_S) } },
    },
  });
}

/**
 * Yoga's `maskError`: a database that is unavailable or too busy for the request (db/retry.ts isDatabaseUnavailable,
 * isDatabaseBusy: a lock or statement wait that ran out, a deadlock past its retries) becomes DATABASE_UNAVAILABLE
 * (503, Retry-After; the statement rolled back, so the request wrote nothing); a PostgreSQL data exception (input the database refused) becomes a 400 `BAD_USER_INPUT` that
 * says what was wrong with the input, in words of our own, at the field's path; every other error is masked as Yoga
 * masks it (`Unexpected error.`). The statement that raised it wrote nothing. Either way Yoga then reports the
 * original to the logger (demoteInputErrors below: one warn line for input).
 * @example createYoga({ maskedErrors: { maskError: maskFaultsNotInput } })
 */
export function maskFaultsNotInput(error: unknown, message: string, isDev?: boolean): Error {
  const path = (error as { path?: readonly (string | number)[] }).path;
  if (causes(error).some(isDatabaseUnavailable)) return databaseUnavailableError(path);
  if (causes(error).some(isDatabaseBusy)) return databaseUnavailableError(path, 'busy');
  const refusal = invalidInputMessage(error);
  if (refusal === null) return maskError(error, message, isDev);
  const located = error as { nodes?: never; source?: never; positions?: never; path?: readonly (string | number)[] };
  return createGraphQLError(refusal, {
    nodes: located.nodes,
    source: located.source,
    positions: located.positions,
    path: located.path,
    extensions: { code: 'BAD_USER_INPUT', http: { status: 400 } },
  });
}

/**
 * The logger Yoga reports masked errors to, with PostgreSQL data exceptions (input the database refused: whatever
 * slipped past validation) demoted to one warn line without a stack; every other error goes on as it was.
 * @example createYoga({ logging: demoteInputErrors(logger) })
 */
export function demoteInputErrors(logger: YogaLogger): YogaLogger {
  return {
    ...logger,
    debug: logger.debug.bind(logger),
    info: logger.info.bind(logger),
    warn: logger.warn.bind(logger),
    error: (...args: unknown[]) => {
      const err = args[0];
      const code = invalidInputCode(err);
      if (code !== null) {
        const original =
          (err as { originalError?: { message?: string } }).originalError ?? (err as { message?: string });
        return logger.warn({ code, reason: original.message }, 'invalid input refused by the database');
      }
      return (logger.error as (...a: unknown[]) => void)(...args);
    },
  };
}
