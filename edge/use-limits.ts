import { EnvelopArmorPlugin } from '@escape.tech/graphql-armor';
import { createGraphQLError, type Plugin } from 'graphql-yoga';
import type { Limits } from './config.js';

/** Stable codes of the operation-shape refusals, all answered with HTTP 400 (docs/edge.md, "Limits"). */
export const LIMIT_CODES = {
  depth: 'QUERY_TOO_DEEP',
  aliases: 'TOO_MANY_ALIASES',
  cost: 'QUERY_TOO_COMPLEX',
  tokens: 'TOO_MANY_TOKENS',
  directives: 'TOO_MANY_DIRECTIVES',
} as const;

type Reporter = { reportError(e: unknown): void } | null;

/** An armor onReject handler that re-issues the refusal as a yoga-realm error with our code and a 400. */
const refuse = (code: string) => (ctx: Reporter, err: Error) => {
  const error = createGraphQLError(err.message.replace(/^Syntax Error: /, ''), { extensions: { code, http: { status: 400 } } });
  // validation rules get a context to report to; the token counter runs inside the parser and can only throw
  if (ctx) ctx.reportError(error);
  else throw error;
};

/**
 * Depth, alias, token, directive and cost limits (graphql-armor), each refusal with a stable `extensions.code`.
 * Field suggestions are masked so a refused query does not map the schema for the caller.
 * @example createYoga({ plugins: [useLimits({ maxDepth: 8 })] })
 */
export function useLimits(options: Partial<Limits> = {}): Plugin {
  const common = { propagateOnRejection: false, exposeLimits: true };
  return EnvelopArmorPlugin({
    maxDepth: { n: options.maxDepth ?? 8, ...common, onReject: [refuse(LIMIT_CODES.depth)] },
    maxAliases: { n: options.maxAliases ?? 15, ...common, onReject: [refuse(LIMIT_CODES.aliases)] },
    maxTokens: { n: options.maxTokens ?? 1_000, ...common, onReject: [refuse(LIMIT_CODES.tokens)] },
    maxDirectives: { n: 20, ...common, onReject: [refuse(LIMIT_CODES.directives)] },
    costLimit: { maxCost: options.maxCost ?? 5_000, ...common, onReject: [refuse(LIMIT_CODES.cost)] },
    blockFieldSuggestion: { enabled: true },
  } as Parameters<typeof EnvelopArmorPlugin>[0]) as Plugin;
}
