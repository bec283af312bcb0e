// The operation-shape limits (depth, aliases, tokens, directives, cost) as one Yoga plugin: each refusal a stable code
// and a 400, the limits the host resolved (MAX_DEPTH, MAX_ALIASES, MAX_TOKENS, MAX_COST).
import { EnvelopArmorPlugin } from '@escape.tech/graphql-armor';
import { createGraphQLError, type Plugin } from 'graphql-yoga';
import type { Limits } from '../common/config-sections.js';

/** Stable codes of the operation-shape refusals, all answered with HTTP 400 (docs/edge.md, "Limits"). */
export const LIMIT_CODES = {
  depth: 'QUERY_TOO_DEEP',
  aliases: 'TOO_MANY_ALIASES',
  cost: 'QUERY_TOO_COMPLEX',
  tokens: 'TOO_MANY_TOKENS',
  directives: 'TOO_MANY_DIRECTIVES',
} as const;

type Reporter = { reportError(e: unknown): void } | null;

/**
 * An armor onReject handler that re-issues the refusal as a yoga-realm error with our code and a 400. `spec: false`:
 * the 400 holds for `Accept: application/json` clients too (GraphQL over HTTP would answer them 200), so every
 * client can act on the status alone.
 */
const refuse = (code: string) => (ctx: Reporter, err: Error) => {
  const error = createGraphQLError(err.message.replace(/^Syntax Error: /, ''), {
    extensions: { code, http: { status: 400, spec: false } },
  });
  // validation rules get a context to report to; the token counter runs inside the parser and can only throw
  if (ctx) ctx.reportError(error);
  else throw error;
};

/**
 * Depth, alias, token, directive and cost limits (graphql-armor), each refusal with a stable `extensions.code`.
 * Field suggestions are masked so a refused query does not map the schema for the caller.
 * @example createYoga({ plugins: [useLimits(config.limits)] })
 */
export function useLimits(limits: Omit<Limits, 'maxBodyBytes'>): Plugin {
  const common = { propagateOnRejection: false, exposeLimits: true };
  const armor = EnvelopArmorPlugin({
    maxDepth: { n: limits.maxDepth, ...common, onReject: [refuse(LIMIT_CODES.depth)] },
    maxAliases: { n: limits.maxAliases, ...common, onReject: [refuse(LIMIT_CODES.aliases)] },
    maxTokens: { n: limits.maxTokens, ...common, onReject: [refuse(LIMIT_CODES.tokens)] },
    maxDirectives: { n: 20, ...common, onReject: [refuse(LIMIT_CODES.directives)] },
    costLimit: { maxCost: limits.maxCost, ...common, onReject: [refuse(LIMIT_CODES.cost)] },
    blockFieldSuggestion: { enabled: true },
  } as Parameters<typeof EnvelopArmorPlugin>[0]) as Plugin;
  const codes = new Set<string>(Object.values(LIMIT_CODES));
  return {
    onPluginInit({ addPlugin }) {
      addPlugin(armor);
    },
    // Yoga re-wraps an error thrown by the parser (the token limit) as a spec error; give every refusal its 400 back.
    onResultProcess({ result }) {
      for (const r of Array.isArray(result) ? result : [result]) {
        type Extensions = { code?: unknown; http?: Record<string, unknown> };
        for (const e of (r as { errors?: { extensions?: Extensions }[] }).errors ?? []) {
          if (e.extensions && typeof e.extensions.code === 'string' && codes.has(e.extensions.code))
            e.extensions.http = { ...e.extensions.http, status: 400, spec: false };
        }
      }
    },
  };
}
