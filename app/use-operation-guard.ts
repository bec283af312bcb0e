// I15: a refused request writes nothing, whatever refused it. A mutation runs its root fields one after another, each
// committing its own writes, so a refusal decided inside a later field (its role, the per-buyer rate limit, a text
// value the database cannot store) would come after the earlier ones committed. Everything that refuses a whole
// operation is decided here, when it is about to execute, before any field runs.
import {
  GraphQLIncludeDirective,
  GraphQLSkipDirective,
  Kind,
  getDirectiveValues,
  getOperationAST,
  valueFromAST,
  visit,
  type DocumentNode,
  type ExecutionArgs,
  type FieldNode,
  type FragmentDefinitionNode,
  type GraphQLInputType,
  type OperationDefinitionNode,
  type SelectionSetNode,
  type ValueNode,
} from 'graphql';
import { createGraphQLError, type Plugin } from 'graphql-yoga';
import type { Context } from '../resolvers/context.js';
import { forbidden, rolesOf } from '../resolvers/auth.js';

type RootField = { name: string; key: string; node: FieldNode };
/** What the guard needs of one operation of a document, worked out once per document (Yoga caches parsed documents). */
type Plan = {
  type: 'Query' | 'Mutation' | 'Subscription';
  op: OperationDefinitionNode;
  fragments: Map<string, FragmentDefinitionNode>;
  /** the root fields, when no selection on the way to them has @skip or @include (else worked out per request) */
  fields: RootField[] | null;
};

/** The root fields an operation will run, fragments spread and @skip / @include applied, in document order. */
function rootFields(plan: Pick<Plan, 'op' | 'fragments'>, variables: Record<string, unknown> | null): RootField[] {
  const runs = (node: Parameters<typeof getDirectiveValues>[1]) =>
    !node.directives?.length ||
    (getDirectiveValues(GraphQLSkipDirective, node, variables ?? {})?.if !== true &&
      getDirectiveValues(GraphQLIncludeDirective, node, variables ?? {})?.if !== false);
  const out: RootField[] = [];
  const seen = new Set<string>();
  const walk = (set: SelectionSetNode) => {
    for (const s of set.selections) {
      if (!runs(s)) continue;
      if (s.kind === Kind.FIELD) out.push({ name: s.name.value, key: s.alias?.value ?? s.name.value, node: s });
      else if (s.kind === Kind.INLINE_FRAGMENT) walk(s.selectionSet);
      else if (!seen.has(s.name.value)) {
        seen.add(s.name.value);
        const f = plan.fragments.get(s.name.value);
        if (f) walk(f.selectionSet);
      }
    }
  };
  walk(plan.op.selectionSet);
  return out;
}

function planOf(document: DocumentNode, operationName: string | null | undefined): Plan | null {
  const op = getOperationAST(document, operationName);
  if (!op) return null;
  const fragments = new Map<string, FragmentDefinitionNode>();
  for (const d of document.definitions) if (d.kind === Kind.FRAGMENT_DEFINITION) fragments.set(d.name.value, d);
  let conditional = false;
  visit(document, { Directive: (d) => void (conditional ||= d.name.value === 'skip' || d.name.value === 'include') });
  const type = op.operation === 'query' ? 'Query' : op.operation === 'mutation' ? 'Mutation' : 'Subscription';
  return { type, op, fragments, fields: conditional ? null : rootFields({ op, fragments }, null) };
}

/** True when some string in `v` (a value, however nested) holds a NUL character: PostgreSQL text cannot. */
const holdsNul = (v: unknown): boolean =>
  typeof v === 'string'
    ? v.includes('\u0000')
    : Array.isArray(v)
      ? v.some(holdsNul)
      : v !== null && typeof v === 'object'
        ? Object.values(v).some(holdsNul)
        : false;

/** True when an argument value (a literal, or the variables it names, however nested) holds a NUL character. */
const valueHoldsNul = (v: ValueNode, variables: Record<string, unknown>): boolean =>
  v.kind === Kind.STRING
    ? v.value.includes('\u0000')
    : v.kind === Kind.VARIABLE
      ? holdsNul(variables[v.name.value])
      : v.kind === Kind.LIST
        ? v.values.some((x) => valueHoldsNul(x, variables))
        : v.kind === Kind.OBJECT
          ? v.fields.some((f) => valueHoldsNul(f.value, variables))
          : false;

const badInput = (key: string) =>
  createGraphQLError('invalid input: a text value contains a NUL character', {
    path: [key],
    extensions: { code: 'BAD_USER_INPUT', http: { status: 400 } },
  });

/**
 * Refuses a whole operation before any of its fields runs (I15):
 *   1. a root field the caller's role may not run (resolvers/auth.ts): 403 FORBIDDEN;
 *   2. a mutation of several root fields with a text value PostgreSQL cannot store in an argument (a literal, or a
 *      variable's value): 400 BAD_USER_INPUT (a single field's own refusal already writes nothing; with several, a
 *      later one's would come after the others);
 *   3. the per-buyer rate limit (`admitBuyer` in the context), counting every placeOrder of the operation, aliased or
 *      not, for its buyer (orders/buyer.ts, resolved once per request: the resolver places with the same): 429.
 * Subscriptions meet the role check when they start. A document's shape is worked out once (Yoga hands the same parsed
 * document to every request with the same text), so a request pays a loop over its root fields.
 * @example createYoga({ plugins: [useOperationGuard()] })
 */
export function useOperationGuard(): Plugin {
  const plans = new WeakMap<DocumentNode, Map<string, Plan | null>>();
  const planFor = (args: ExecutionArgs) => {
    let byName = plans.get(args.document);
    if (!byName) plans.set(args.document, (byName = new Map()));
    const name = args.operationName ?? '';
    if (!byName.has(name)) byName.set(name, planOf(args.document, args.operationName));
    return byName.get(name)!;
  };

  /** Synchronous unless the operation has a placeOrder to count (the buyer's token and the rate limit's store are async). */
  const guard = (args: ExecutionArgs, stop: (errors: Error[]) => void): void | Promise<void> => {
    const ctx = args.contextValue as Context | undefined;
    const plan = ctx?.caller ? planFor(args) : null;
    if (!ctx || !plan) return; // execution reports a missing operation itself
    const variables = (args.variableValues ?? {}) as Record<string, unknown>;
    const fields = plan.fields ?? rootFields(plan, variables);
    for (const f of fields) {
      const roles = rolesOf(`${plan.type}.${f.name}`);
      if (roles && !roles.includes(ctx.caller.role)) return stop([forbidden(`${plan.type}.${f.name}`, [f.key])]);
    }
    if (plan.type !== 'Mutation') return;
    if (fields.length > 1) {
      const bad = fields.find((f) => f.node.arguments?.some((a) => valueHoldsNul(a.value, variables)));
      if (bad) return stop([badInput(bad.key)]);
    }
    const admit = ctx.admitBuyer;
    const placing = admit ? fields.filter((f) => f.name === 'placeOrder') : [];
    if (!admit || placing.length === 0) return;
    const placeOrder = args.schema.getMutationType()?.getFields().placeOrder;
    const inputType = placeOrder?.args.find((a) => a.name === 'input')?.type as GraphQLInputType;
    return (async () => {
      const perBuyer = new Map<string, number>();
      for (const f of placing) {
        const node = f.node.arguments?.find((a) => a.name.value === 'input')?.value;
        const input =
          node && (valueFromAST(node, inputType, variables) as { customerId?: unknown; buyerToken?: unknown });
        if (!input || input.customerId == null) continue; // execution refuses input it cannot coerce; it writes nothing
        const buyerToken = typeof input.buyerToken === 'string' ? input.buyerToken : null;
        const buyer = await ctx.buyerOf({ customerId: String(input.customerId), buyerToken });
        if (buyer.ok) perBuyer.set(buyer.buyer.id, (perBuyer.get(buyer.buyer.id) ?? 0) + 1); // refused: it writes nothing
      }
      try {
        for (const [buyer, n] of perBuyer) await admit(ctx.caller, buyer, n);
      } catch (err) {
        stop([err as Error]);
      }
    })();
  };
  return {
    onExecute: ({ args, setResultAndStopExecution: stop }) =>
      guard(args, (errors) => stop({ errors: errors as never })),
    onSubscribe: ({ args, setResultAndStopExecution: stop }) =>
      guard(args, (errors) => stop({ errors: errors as never })),
  };
}
