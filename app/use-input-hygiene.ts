// Invalid input is the caller's mistake, not the server's: refused with a clear error and logged at warn, one line,
// no stack (an error-level stack per request would bury real faults and let anyone flood the error log).
import { createGraphQLError, type Plugin, type YogaLogger } from 'graphql-yoga';
import { Kind, visit, type DocumentNode } from 'graphql';

const NUL = '\u0000';
const refusal = () =>
  createGraphQLError('invalid input: text may not contain NUL (\\u0000) characters', { extensions: { code: 'BAD_USER_INPUT', http: { status: 400 } } });

function literalHasNul(doc: DocumentNode): boolean {
  let found = false;
  visit(doc, {
    [Kind.STRING]: (node) => {
      if (node.value.includes(NUL)) found = true;
    },
  });
  return found;
}

function valueHasNul(v: unknown, depth = 0): boolean {
  if (typeof v === 'string') return v.includes(NUL);
  if (depth > 32 || v === null || typeof v !== 'object') return false;
  return Array.isArray(v) ? v.some((x) => valueHasNul(x, depth + 1)) : Object.values(v).some((x) => valueHasNul(x, depth + 1));
}

/**
 * Refuses text with a NUL character (PostgreSQL cannot store one: the query would fail in the database) in a literal or
 * a variable, with BAD_USER_INPUT, before anything runs; over HTTP and graphql-ws alike. Logged at warn, no stack.
 * @example plugins: [useInputHygiene(logger)]
 */
export function useInputHygiene(logger: YogaLogger): Plugin {
  const refuse = (where: string) => {
    logger.warn({ code: 'BAD_USER_INPUT', where }, 'invalid input refused: NUL character in text');
    return refusal();
  };
  return {
    onValidate({ params, setResult }) {
      if (literalHasNul(params.documentAST)) setResult([refuse('literal')]);
    },
    onExecute({ args, setResultAndStopExecution }) {
      if (valueHasNul(args.variableValues)) setResultAndStopExecution({ errors: [refuse('variables')] });
    },
    onSubscribe({ args, setResultAndStopExecution }) {
      if (valueHasNul(args.variableValues)) setResultAndStopExecution({ errors: [refuse('variables')] });
    },
  };
}

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
