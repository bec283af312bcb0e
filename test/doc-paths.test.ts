// Every repository path README.md and docs/*.md name exists: a file or folder as written (a glob: at least one match),
// and every relative link points at a file. A path with a placeholder (`<sku>`, `:id`) is a URL, not a file.
import { describe, expect, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { ROOT } from '../kit/root.js';

const TOP = readdirSync(ROOT).filter((f) => !['node_modules', '.git', '.data'].includes(f));
const FOLDERS = TOP.filter((f) => !f.includes('.') || f === '.ci');
const DOCS = [
  'README.md',
  ...readdirSync(path.join(ROOT, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
];
const esc = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
// `folder/...` of a top-level folder, or a top-level file such as package.json, as written in prose, code or a link
const NAMED = new RegExp(
  `(?<![\\w./:-])((?:${FOLDERS.map(esc).join('|')})/[\\w./*-]*[\\w*/]|(?:${TOP.filter(
    (f) => f.includes('.') && f !== '.ci',
  )
    .map(esc)
    .join('|')})(?![\\w.-]))`,
  'g',
);
const LINK = /\]\((?!https?:|#|mailto:)([^)#\s]+)(?:#[^)]*)?\)/g;
// written like paths, named as something else: a file in an example error message, and Shopify's webhook topics
// (`orders/create`, `orders/paid`, ...: orders/ holds only .ts files, so a name there without an extension is a topic)
const NOT_PATHS = new Set(['db/migrations/0002_x.sql']);
const isShopifyTopic = (p: string) => /^orders\/[a-z_]+$/.test(p);
// what a run writes (bench results, screenshots): git-ignored, so a fresh clone has none until it runs
// (a folder pattern such as `test/artifacts/` matches only with the slash while the folder does not exist)
const isOutput = (p: string) =>
  [p, `${p}/`].some((q) => spawnSync('git', ['check-ignore', '-q', '--no-index', q], { cwd: ROOT }).status === 0);

function exists(p: string): boolean {
  if (!p.includes('*')) return existsSync(path.join(ROOT, p));
  const re = new RegExp(`^${p.split('*').map(esc).join('[^/]*')}$`);
  const walk = (dir: string): string[] =>
    readdirSync(path.join(ROOT, dir), { withFileTypes: true }).flatMap((e) => {
      const rel = path.posix.join(dir, e.name);
      return e.isDirectory() ? [rel, ...walk(rel)] : [rel];
    });
  return walk(p.split('/')[0]!).some((f) => re.test(f));
}

describe('the docs', () => {
  it.each(DOCS)('%s names only paths that exist', (doc) => {
    const text = readFileSync(path.join(ROOT, doc), 'utf8');
    const named = new Set<string>();
    for (const line of text.split('\n')) {
      for (const m of line.matchAll(NAMED))
        if (!/[<>:]/.test(line.slice(m.index, m.index + m[0].length + 1))) named.add(m[1]!.replace(/\/$/, ''));
      for (const m of line.matchAll(LINK))
        named.add(path.posix.normalize(path.posix.join(path.posix.dirname(doc), m[1]!)));
    }
    expect(named.size).toBeGreaterThan(0);
    expect([...named].filter((p) => !NOT_PATHS.has(p) && !isShopifyTopic(p) && !exists(p) && !isOutput(p))).toEqual([]);
  });
});
