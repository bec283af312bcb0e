// `npm run persisted:build`: edge/operations/*.graphql -> edge/persisted-operations.json (committed).
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildManifest } from '../edge/persisted-build.js';
import { runEntry } from './entry.js';

const EDGE = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../edge');

void runEntry({
  config: () => ({}),
  oneShot: true,
  async start() {
    const manifest = await buildManifest(path.join(EDGE, 'operations'));
    const out = path.join(EDGE, 'persisted-operations.json');
    await writeFile(out, JSON.stringify(manifest, null, 2) + '\n');
    const lines = Object.entries(manifest.operations).map(([id, op]) => `${id}  ${op.type.padEnd(8)} ${op.name}${op.cacheable ? '  (edge-cacheable)' : ''}`);
    return { lines: [...lines, `wrote ${path.relative(process.cwd(), out)}`], stop: async () => {} };
  },
});
