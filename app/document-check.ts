// The publish-time check of a partner's document: the same parser, schema validation and query limits (useLimits) that
// a request meets at call time, so a document that would be refused when called is refused when published instead.
import {
  Kind,
  parse,
  specifiedRules,
  validate,
  type DocumentNode,
  type GraphQLSchema,
  type OperationDefinitionNode,
} from 'graphql';
import { envelop, type Plugin } from 'graphql-yoga';
import type { Limits } from '../common/config-sections.js';
import type { DocumentCheck, DocumentVerdict } from '../orders/partner-documents.js';
import { useLimits } from './use-limits.js';

/** graphql-js as the envelop engine, with the specified rules: what Yoga runs underneath its plugins. */
const graphqlEngine: Plugin = {
  onParse: ({ setParseFn }) => setParseFn(parse),
  onValidate: ({ setValidationFn, addValidationRule }) => {
    setValidationFn(validate);
    for (const rule of specifiedRules) addValidationRule(rule);
  },
};

const coded = (e: { message: string; extensions?: Record<string, unknown> }) =>
  typeof e.extensions?.code === 'string' ? `${e.extensions.code}: ${e.message}` : e.message;

/**
 * A check of one document body against `schema` and `limits` (the server's own useLimits plugin, so the limits and
 * codes are the call-time ones): exactly one operation, valid, within depth, aliases, tokens, directives and cost.
 * @example const check = createDocumentCheck(schema, config.limits); check('{ product(sku: "A") { sku } }')
 */
export function createDocumentCheck(schema: GraphQLSchema, limits: Omit<Limits, 'maxBodyBytes'>): DocumentCheck {
  const getEnveloped = envelop({ plugins: [graphqlEngine, useLimits(limits)] });
  return (body): DocumentVerdict => {
    const run = getEnveloped({});
    let doc: DocumentNode;
    try {
      doc = run.parse(body);
    } catch (err) {
      return {
        ok: false,
        reason: coded(err as Error & { extensions?: Record<string, unknown> }).replace(
          /^Syntax Error: /,
          'syntax error: ',
        ),
      };
    }
    const ops = doc.definitions.filter((d): d is OperationDefinitionNode => d.kind === Kind.OPERATION_DEFINITION);
    const name = ops.length === 1 ? (ops[0]!.name?.value ?? null) : null;
    if (ops.length !== 1)
      return { ok: false, reason: `a document holds exactly one operation (this one has ${ops.length})` };
    const errors = run.validate(schema, doc);
    if (errors.length) return { ok: false, name, reason: errors.map(coded).join('; ') };
    const op = ops[0]!;
    const rootFields = op.selectionSet.selections.map((s) => (s.kind === Kind.FIELD ? s.name.value : `...${s.kind}`));
    return { ok: true, name, type: op.operation, rootFields };
  };
}
