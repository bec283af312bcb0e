// I15: a refused request writes nothing, whatever refused it. A mutation runs its root fields one after another, each
// committing its own writes, so a refusal decided inside a later field (its role, the per-buyer rate limit, a text
// value the database cannot store) would come after the earlier ones committed. Everything that refuses a whole
// operation is decided here, when it is about to execute, before any field runs.
import {
  GraphQLSkipDirective,
  GraphQLIncludeDirective,
  Kind,
  getArgumentValues,
  getDirectiveValues,
  getOperationAST,
  getVariableValues,
  type ExecutionArgs,
  type FieldNode,
  type FragmentDefinitionNode,
  type GraphQLObjectType,
  type SelectionSetNode,
} from 'graphql';
import { createGraphQLError, type Plugin } from 'graphql-yoga';
import type { Context } from '../resolvers/context.js';
import { forbidden, rolesOf } from '../resolvers/auth.js';

type RootField = { name: string; key: string; node: FieldNode };

/** The root fields an operation will run, fragments spread and @skip / @include applied, in document order. */
function rootFields(args: ExecutionArgs, selectionSet: SelectionSetNode): RootField[] {
  const fragments = new Map<string, FragmentDefinitionNode>();
  for (const d of args.document.definitions) if (d.kind === Kind.FRAGMENT_DEFINITION) fragments.set(d.name.value, d);
  const variables = (args.variableValues ?? {}) as Record<string, unknown>;
  const runs = (node: Parameters<typeof getDirectiveValues>[1]) =>
    getDirectiveValues(GraphQLSkipDirective, node, variables)?.if !== true && getDirectiveValues(GraphQLIncludeDirective, node, variables)?.if !== false;
  const out: RootField[] = [];
  const seen = new Set<string>();
  const walk = (set: SelectionSetNode) => {
    for (const s of set.selections) {
      if (!runs(s)) continue;
      if (s.kind === Kind.FIELD) out.push({ name: s.name.value, key: s.alias?.value ?? s.name.value, node: s });
      else if (s.kind === Kind.INLINE_FRAGMENT) walk(s.selectionSet);
      else if (!seen.has(s.name.value)) {
        seen.add(s.name.value);
        const f = fragments.get(s.name.value);
        if (f) walk(f.selectionSet);
      }
    }
  };
  walk(selectionSet);
  return out;
}

/** True when some string in `v` (an argument value, however nested) holds a NUL character: PostgreSQL text cannot. */
const holdsNul = (v: unknown): boolean =>
  typeof v === 'string' ? v.includes('\u0000') : Array.isArray(v) ? v.some(holdsNul) : v !== null && typeof v === 'object' ? Object.values(v).some(holdsNul) : false;

const badInput = (key: string) =>
  createGraphQLError('invalid input: a text value contains a NUL character', { path: [key], extensions: { code: 'BAD_USER_INPUT', http: { status: 400 } } });

/**
 * Refuses a whole operation before any of its fields runs (I15):
 *   1. a root field the caller's role may not run (resolvers/auth.ts): 403 FORBIDDEN;
 *   2. a mutation of several root fields with a text value PostgreSQL cannot store in any of them: 400 BAD_USER_INPUT
 *      (a single field's own refusal already writes nothing; with several, a later one's would come after the others);
 *   3. the per-buyer rate limit (`admitBuyer` in the context), counting every placeOrder of the operation, aliased or
 *      not, for its buyer (orders/buyer.ts): 429 RATE_LIMITED.
 * Subscriptions meet the role check when they start.
 * @example createYoga({ plugins: [useOperationGuard()] })
 */
export function useOperationGuard(): Plugin {
  const guard = async (args: ExecutionArgs, stop: (errors: Error[]) => void) => {
    const op = getOperationAST(args.document, args.operationName);
    const ctx = args.contextValue as Context | undefined;
    if (!op || !ctx?.caller) return; // execution reports the missing operation itself
    const type = op.operation === 'query' ? 'Query' : op.operation === 'mutation' ? 'Mutation' : 'Subscription';
    const fields = rootFields(args, op.selectionSet);
    for (const f of fields) {
      const roles = rolesOf(`${type}.${f.name}`);
      if (roles && !roles.includes(ctx.caller.role)) return stop([forbidden(`${type}.${f.name}`, [f.key])]);
    }
    if (op.operation !== 'mutation') return;
    const placing = fields.filter((f) => f.name === 'placeOrder');
    if (fields.length < 2 && !(placing.length && ctx.admitBuyer)) return;
    // the arguments as execution will see them; input it cannot coerce is left to execution to refuse, as it would
    const root = args.schema.getMutationType() as GraphQLObjectType;
    const coerced = getVariableValues(args.schema, op.variableDefinitions ?? [], (args.variableValues ?? {}) as Record<string, unknown>);
    if (coerced.errors) return;
    const argsOf = new Map<RootField, Record<string, unknown>>();
    for (const f of fields) {
      const def = root.getFields()[f.name];
      if (!def) return;
      try {
        argsOf.set(f, getArgumentValues(def, f.node, coerced.coerced));
      } catch {
        return;
      }
    }
    if (fields.length > 1) {
      const bad = fields.find((f) => holdsNul(argsOf.get(f)));
      if (bad) return stop([badInput(bad.key)]);
    }
    if (!ctx.admitBuyer || placing.length === 0) return;
    const perBuyer = new Map<string, number>();
    for (const f of placing) {
      const buyer = await ctx.buyerOf(argsOf.get(f)!.input as { customerId: string; buyerToken?: string | null });
      if (buyer.ok) perBuyer.set(buyer.buyer.id, (perBuyer.get(buyer.buyer.id) ?? 0) + 1); // refused: it writes nothing
    }
    try {
      for (const [buyer, n] of perBuyer) await ctx.admitBuyer(ctx.caller, buyer, n);
    } catch (err) {
      return stop([err as Error]);
    }
  };
  return {
    async onExecute({ args, setResultAndStopExecution }) {
      await guard(args, (errors) => setResultAndStopExecution({ errors: errors as never }));
    },
    async onSubscribe({ args, setResultAndStopExecution }) {
      await guard(args, (errors) => setResultAndStopExecution({ errors: errors as never }));
    },
  };
}
