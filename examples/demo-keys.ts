// How an example script finds a started `npm start`: its base URL (LASTUNIT_URL, default http://127.0.0.1:4000) and
// the demo keys it minted, kept in DATA_DIR/demo-keys.json (DATA_DIR: .data) unless the caller gives keys itself.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

export type DemoKeys = { role: string; key: string; client?: string }[];

/** The server's base URL from LASTUNIT_URL (a trailing /graphql or / dropped). */
export const lastunitBase = (env: Record<string, string | undefined>) =>
  (env.LASTUNIT_URL || 'http://127.0.0.1:4000').replace(/\/graphql\/?$/, '').replace(/\/$/, '');

/** The demo keys `npm start` keeps under `dataDir` (relative to the repository root); throws saying to start it. */
export function demoKeys(dataDir: string, missing: string): DemoKeys {
  const file = path.resolve(ROOT, dataDir, 'demo-keys.json');
  try {
    return JSON.parse(readFileSync(file, 'utf8')) as DemoKeys;
  } catch {
    throw new Error(`no ${missing} given and no demo keys in ${file}: start the server with \`npm start\` first`);
  }
}
