// `npm run persisted:build`: edge/operations/*.graphql -> edge/persisted-operations.json, and the same operations in
// Apollo's persisted query manifest format -> edge/persisted-query-manifest.json (both committed).
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildManifest } from '../edge/persisted-build.js';
import { toApolloManifest } from '../edge/persisted-manifest.js';
import { runEntry } from './entry.js';

const EDGE = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../edge');

void runEntry({
  config: () => ({}),
  oneShot: true,
  async start() {
    const manifest = await buildManifest(path.join(EDGE, 'operations'));
    const out = path.join(EDGE, 'persisted-operations.json');
    const apollo = path.join(EDGE, 'persisted-query-manifest.json');
    await writeFile(out, `${JSON.stringify(manifest, null, 2)}\n`);
    await writeFile(apollo, `${JSON.stringify(toApolloManifest(manifest), null, 2)}\n`);
    const lines = Object.entries(manifest.operations).map(
      ([id, op]) => `${id}  ${op.type.padEnd(8)} ${op.name}${op.cacheable ? '  (edge-cacheable)' : ''}`,
    );
    return {
      lines: [...lines, `wrote ${path.relative(process.cwd(), out)} and ${path.relative(process.cwd(), apollo)}`],
      stop: async () => {},
    };
  },
});
