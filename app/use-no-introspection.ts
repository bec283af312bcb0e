import { createGraphQLError, type Plugin } from 'graphql-yoga';
import { Kind, type DocumentNode, type SelectionSetNode } from 'graphql';

function asksIntrospection(doc: DocumentNode): boolean {
  const seen = (set: SelectionSetNode | undefined): boolean =>
    !!set &&
    set.selections.some((s) =>
      s.kind === Kind.FIELD
        ? s.name.value === '__schema' || s.name.value === '__type' || seen(s.selectionSet)
        : s.kind === Kind.INLINE_FRAGMENT && seen(s.selectionSet),
    );
  return doc.definitions.some(
    (d) => (d.kind === Kind.OPERATION_DEFINITION || d.kind === Kind.FRAGMENT_DEFINITION) && seen(d.selectionSet),
  );
}

/**
 * Refuses `__schema` / `__type` (HTTP 400, code INTROSPECTION_DISABLED) when `enabled`; `__typename` stays allowed.
 * @example useNoIntrospection({ enabled: config.nodeEnv === 'production' })
 */
export function useNoIntrospection(options: { enabled?: boolean } = {}): Plugin {
  if (options.enabled === false) return {};
  return {
    onValidate({ params, setResult }) {
      if (asksIntrospection(params.documentAST)) {
        setResult([
          createGraphQLError('introspection is disabled', {
            extensions: { code: 'INTROSPECTION_DISABLED', http: { status: 400, spec: false } },
          }),
        ]);
      }
    },
  };
}
