// Invalid input is the caller's mistake, not the server's: logged at warn, one line, no stack (an error-level stack per
// request would bury real faults and let anyone flood the error log). Validation catches it first where it can
// (orders/rules.ts, resolvers/catalog.ts); this is the net for input only the database refuses.
import type { YogaLogger } from 'graphql-yoga';

/** PostgreSQL's "data exception" class (22xxx: invalid text, out of range, bad encoding...): the input's fault. */
export const isInvalidInputError = (err: unknown): boolean => {
  const code = (err as { originalError?: { code?: unknown }; code?: unknown } | null)?.originalError?.code ?? (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' && code.startsWith('22');
};

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
      if (isInvalidInputError(err)) {
        const original = (err as { originalError?: { code?: string; message?: string } }).originalError ?? (err as { code?: string; message?: string });
        return logger.warn({ code: original.code, reason: original.message }, 'invalid input refused by the database');
      }
      return (logger.error as (...a: unknown[]) => void)(...args);
    },
  };
}
