// GraphQL Code Generator, client preset with persisted documents: `npx graphql-codegen --config examples/partners/codegen/codegen.ts`
// writes gql/ (typed documents carrying their sha256 hash) and gql/persisted-documents.json (id -> body) to publish.
import type { CodegenConfig } from '@graphql-codegen/cli';

const config: CodegenConfig = {
  // the API's schema as SDL (this repository keeps it printed in test/__snapshots__/schema.graphql)
  schema: 'test/__snapshots__/schema.graphql',
  documents: ['examples/partners/codegen/operations.ts'],
  // imports with .js, as ES modules under NodeNext resolution want them
  emitLegacyCommonJSImports: false,
  generates: {
    'examples/partners/codegen/gql/': {
      preset: 'client',
      presetConfig: { persistedDocuments: { hashAlgorithm: 'sha256' }, fragmentMasking: false },
      config: { onlyOperationTypes: true, useTypeImports: true },
    },
  },
};

export default config;
