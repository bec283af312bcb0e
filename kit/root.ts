// The repository root, whatever the cwd: kit spawns entries and writes bundles relative to it.
import path from 'node:path';

export const ROOT = path.resolve(import.meta.dirname, '..');
