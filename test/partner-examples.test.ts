// The partner examples' generated files stay what their tools generate, and docs/partners.md shows the example files
// as they are (test/partner-clients.test.ts runs them against the servers).
import { describe, expect, it } from 'vitest';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { generatePersistedQueryManifest } from '@apollo/generate-persisted-query-manifest';
import { generate } from '@graphql-codegen/cli';
import { sha256Hex } from '../common/hash.js';
import { ROOT } from '../kit/root.js';
import codegenConfig from '../examples/partners/codegen/codegen.js';
import { urqlDocuments } from '../examples/partners/urql/documents.js';
import { PARTNER_PRODUCT_ID } from '../examples/partners/fetch/client.js';

const EX = 'examples/partners';
const text = (file: string) => readFile(path.join(ROOT, file), 'utf8');
const json = async (file: string) => JSON.parse(await text(file));

describe('the generated files of the partner examples', () => {
  it('apollo/persisted-query-manifest.json is what `npx generate-persisted-query-manifest --config ...` writes', async () => {
    const configPath = path.join(ROOT, `${EX}/apollo/persisted-query-manifest.config.json`);
    const generated = await generatePersistedQueryManifest(
      await json(`${EX}/apollo/persisted-query-manifest.config.json`),
      configPath,
    );
    expect(generated.operations.map((o) => o.name)).toEqual(['PartnerProduct']);
    expect(await json(`${EX}/apollo/persisted-query-manifest.json`)).toEqual(generated);
  });

  it('codegen/gql/ is what `npx graphql-codegen --config examples/partners/codegen/codegen.ts` writes, hashes included', async () => {
    const outputs = (await generate({ ...codegenConfig, cwd: ROOT, silent: true }, false)) as {
      filename: string;
      content: string;
    }[];
    expect(outputs.map((o) => path.basename(o.filename)).sort()).toEqual([
      'gql.ts',
      'graphql.ts',
      'index.ts',
      'persisted-documents.json',
    ]);
    for (const o of outputs)
      expect(await text(path.relative(ROOT, path.resolve(ROOT, o.filename))), o.filename).toBe(o.content);
    // the client preset's ids are "sha256:<hex>" of the body it wrote: what publish accepts
    for (const [id, body] of Object.entries(await json(`${EX}/codegen/gql/persisted-documents.json`)))
      expect(id).toBe(`sha256:${await sha256Hex(body as string)}`);
  });

  it('urql/persisted-documents.json is what `npx tsx examples/partners/urql/documents.ts` writes', async () => {
    expect(await json(`${EX}/urql/persisted-documents.json`)).toEqual(urqlDocuments());
  });

  it("fetch/persisted-documents.json and the client's id are the sha256 of partner-product.graphql", async () => {
    const body = await text(`${EX}/fetch/partner-product.graphql`);
    expect(PARTNER_PRODUCT_ID).toBe(await sha256Hex(body));
    expect(await json(`${EX}/fetch/persisted-documents.json`)).toEqual({ [PARTNER_PRODUCT_ID]: body });
  });
});

describe('docs/partners.md', () => {
  it('shows every example file as it is in examples/partners', async () => {
    const doc = await text('docs/partners.md');
    const blocks = [...doc.matchAll(/<!-- example: (\S+) -->\n```\w*\n([\s\S]*?)```/g)].map((m) => ({
      file: m[1]!,
      shown: m[2]!,
    }));
    expect(blocks.map((b) => b.file).sort()).toEqual(
      [
        'apollo/client.ts',
        'apollo/operations.ts',
        'apollo/persisted-query-manifest.config.json',
        'codegen/client.ts',
        'codegen/codegen.ts',
        'codegen/operations.ts',
        'fetch/client.ts',
        'fetch/partner-product.graphql',
        'urql/client.ts',
        'urql/documents.ts',
        'urql/operations.ts',
      ].map((f) => `${EX}/${f}`),
    );
    for (const b of blocks) expect(b.shown.trim(), b.file).toBe((await text(b.file)).trim());
  });
});
