// The layer rule of docs/architecture.md, checked over the import graph: `npm run check:layers`, and test/layers.test.ts.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export type Violation = { file: string; imports: string; why: string };

/**
 * The floors, top first, from the ```layers block of docs/architecture.md: one floor per line, folders on one line
 * share a floor and may not import each other.
 */
export function readFloors(architectureMd: string): string[][] {
  const m = /```layers\n([\s\S]*?)```/.exec(architectureMd);
  if (!m) throw new Error('docs/architecture.md has no ```layers block');
  return m[1]!
    .split('\n')
    .map((l) => l.replace(/#.*/, '').trim())
    .filter(Boolean)
    .map((l) => l.split(/\s+/).map((f) => f.replace(/\/$/, '')));
}

const IMPORT =
  /(?:^|\n)\s*(?:import|export)\s[^'"]*?from\s*['"]([^'"]+)['"]|(?:^|\n)\s*import\s*['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)/g;

/** Every relative module a source file imports (type-only imports included: they are arrows too). */
export function importsOf(source: string): string[] {
  const out: string[] = [];
  for (const m of source.matchAll(IMPORT)) {
    const spec = m[1] ?? m[2] ?? m[3];
    if (spec?.startsWith('.')) out.push(spec);
  }
  return out;
}

/**
 * Checks `files` (repo-relative path -> source) against `floors`: a file may import its own folder and any folder on a
 * lower floor, nothing else of ours (not a higher floor, not a neighbour on its own floor, not test/, bench/ or kit/).
 */
export function checkLayers(files: Map<string, string>, floors: string[][]): Violation[] {
  const floorOf = new Map<string, number>();
  for (const [i, fs] of floors.entries()) for (const f of fs) floorOf.set(f, i);
  const top = (p: string) => p.split('/')[0]!;
  const out: Violation[] = [];
  for (const [file, source] of files) {
    const from = top(file);
    const fromFloor = floorOf.get(from);
    if (fromFloor === undefined) continue;
    for (const spec of importsOf(source)) {
      const target = path.posix.normalize(path.posix.join(path.posix.dirname(file), spec));
      const to = top(target);
      if (to === from) continue;
      const toFloor = floorOf.get(to);
      if (toFloor === undefined)
        out.push({
          file,
          imports: target,
          why: `${to}/ is not part of the product (only test/ and bench/ may use it)`,
        });
      else if (toFloor < fromFloor)
        out.push({ file, imports: target, why: `${from}/ may not import ${to}/: it is a floor above` });
      else if (toFloor === fromFloor)
        out.push({ file, imports: target, why: `${from}/ and ${to}/ share a floor and may not import each other` });
    }
  }
  return out;
}

const SOURCE = /\.(ts|mts|js|mjs)$/;

/** Every source file of the product folders named in `floors`, read from `root`. */
export function readProduct(root: string, floors: string[][]): Map<string, string> {
  const files = new Map<string, string>();
  const walk = (dir: string) => {
    for (const name of readdirSync(path.join(root, dir))) {
      const rel = `${dir}/${name}`;
      if (statSync(path.join(root, rel)).isDirectory()) walk(rel);
      else if (SOURCE.test(name) && !name.endsWith('.d.ts')) files.set(rel, readFileSync(path.join(root, rel), 'utf8'));
    }
  };
  for (const folder of floors.flat()) walk(folder);
  return files;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) {
  const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
  const floors = readFloors(readFileSync(path.join(root, 'docs/architecture.md'), 'utf8'));
  const violations = checkLayers(readProduct(root, floors), floors);
  for (const v of violations) console.error(`${v.file} -> ${v.imports}: ${v.why}`);
  console.log(
    violations.length
      ? `${violations.length} import(s) break the layers of docs/architecture.md`
      : `layers ok: ${floors.map((f) => f.join(' ')).join(' > ')}`,
  );
  process.exit(violations.length ? 1 : 0);
}
