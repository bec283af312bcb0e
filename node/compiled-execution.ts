// Queries and mutations compiled once per document (graphql-jit through @envelop/graphql-jit) on the Node host.
import { execute as graphqlExecute, GraphQLError, type ExecutionArgs, type ExecutionResult } from 'graphql';
import type { Plugin } from 'graphql-yoga';
import { useGraphQlJit } from '@envelop/graphql-jit';
import { handleMaybePromise } from '@whatwg-node/promise-helpers';

type Execute = (args: ExecutionArgs) => ExecutionResult | Promise<ExecutionResult>;

/**
 * graphql-jit's errors carry `locations` but not the document positions they came from, and Yoga rebuilds every error
 * of an answer from its source and positions (to drop internal extensions), which would lose them: each error is
 * rebuilt here as graphql-js builds it, from the document's source and the positions of its locations.
 */
function located(result: ExecutionResult, args: ExecutionArgs): ExecutionResult {
  const source = args.document.loc?.source;
  if (!result.errors?.length || !source) return result;
  let lineStarts: number[] | undefined;
  const position = ({ line, column }: { line: number; column: number }) => {
    if (!lineStarts) {
      lineStarts = [0];
      for (const m of source.body.matchAll(/\r\n|[\n\r]/g)) lineStarts.push(m.index! + m[0].length);
    }
    return (lineStarts[line - 1] ?? 0) + column - 1;
  };
  const errors = result.errors.map((e) =>
    e.nodes || e.positions || !e.locations?.length
      ? e
      : new GraphQLError(e.message, {
          source,
          positions: e.locations.map(position),
          path: e.path,
          originalError: e.originalError ?? undefined,
          extensions: e.extensions,
        }),
  );
  return Object.assign(Object.create(Object.getPrototypeOf(result)), result, { errors });
}

/**
 * A Yoga plugin that runs each query and mutation document as JavaScript compiled from it the first time it is seen
 * (graphql-jit), kept per parsed document (Yoga's parser cache hands the same document back for the same text, and a
 * document it drops takes its compiled form with it). The compiled form coerces variables and completes results
 * without graphql-js walking the schema per request: on a sold-out `placeOrder` about 20 µs of the server's CPU per
 * request (an A/B of two servers on one database, 64 clients).
 *
 * An answer without `data` executed nothing (the variables could not be coerced, or graphql-jit could not compile the
 * document): graphql-js answers those, so clients get graphql-js's errors, which name the variable and the path inside
 * it, where graphql-jit names a nested field as a variable of its own (`Variable "$quantity" got invalid value`), and a
 * document graphql-jit cannot compile still runs. test/compiled-execution.test.ts sends the same requests through both.
 *
 * Node only: the code is generated with `new Function`, which Cloudflare Workers refuse (the edge host keeps graphql-js).
 * Subscriptions keep Yoga's executor (shared execution, subscriptions/shared-execution.ts).
 * @example createApp({ ..., executionPlugins: [useCompiledExecution()] })
 */
export function useCompiledExecution(opts: { onError?: (err: unknown) => void } = {}): Plugin {
  const jit = useGraphQlJit({}, { onError: (r) => opts.onError?.(r) });
  return {
    onExecute(payload) {
      return jit.onExecute!({
        ...payload,
        setExecuteFn: (compiled: Execute) =>
          payload.setExecuteFn(((args: ExecutionArgs) =>
            handleMaybePromise(
              () => compiled(args),
              (result) => ('data' in result ? located(result, args) : graphqlExecute(args)),
            )) as Parameters<typeof payload.setExecuteFn>[0]),
      } as Parameters<NonNullable<typeof jit.onExecute>>[0]);
    },
  };
}
