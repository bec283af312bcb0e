// Builds the persisted-operations manifest from edge/operations/*.graphql (`npm run persisted:build`).
// Each operation is validated against the schema and keyed by the sha256 of its printed document, so the id
// changes exactly when the operation does.
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { Kind, parse, print, validate, type OperationDefinitionNode } from 'graphql';
import { schema } from '../schema/index.js';
import { sha256Hex } from '../common/hash.js';
import { isPublicRead, type PersistedManifest } from './persisted-manifest.js';

export async function buildManifest(dir: string): Promise<PersistedManifest> {
  const files = (await readdir(dir)).filter((f) => f.endsWith('.graphql')).sort();
  const operations: PersistedManifest['operations'] = {};
  for (const file of files) {
    const doc = parse(await readFile(path.join(dir, file), 'utf8'));
    const errors = validate(schema, doc);
    if (errors.length) throw new Error(`${file}: ${errors.map((e) => e.message).join('; ')}`);
    const ops = doc.definitions.filter((d): d is OperationDefinitionNode => d.kind === Kind.OPERATION_DEFINITION);
    if (ops.length !== 1 || !ops[0]!.name) throw new Error(`${file}: exactly one named operation per file`);
    const op = ops[0]!;
    const document = print(doc);
    const rootFields = op.selectionSet.selections.map((s) => (s.kind === Kind.FIELD ? s.name.value : '?'));
    operations[await sha256Hex(document)] = {
      name: op.name!.value,
      type: op.operation,
      cacheable: isPublicRead(op.operation, rootFields),
      document,
    };
  }
  return { version: 1, operations };
}
