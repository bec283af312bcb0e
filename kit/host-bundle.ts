// The Node host as one ES module for the test suite's many server starts (test/support/global-setup.ts): our
// TypeScript bundled by esbuild once per run, node_modules left as imports. A start then skips tsx's transform and
// resolution of ~200 files (loading the host: ~0.6 s instead of ~0.9 s with Node's compile cache, measured here). Each
// file's import.meta.url and import.meta.dirname are its own source file's, so paths it reads beside itself
// (migrations, the live and console pages, GraphiQL's assets) are found as under tsx.
import { readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { build } from 'esbuild';
import { ROOT } from './root.js';

/** Where the bundle of this process goes: under node_modules/.cache (git-ignored), so its imports resolve from ROOT. */
export const hostBundlePath = (tag: string) =>
  path.join(ROOT, 'node_modules', '.cache', 'lastunit-host', `start-${tag}.mjs`);

/**
 * Bundles node/start.ts to `outfile` and returns a function that deletes it.
 * @example const remove = await buildHostBundle(hostBundlePath(String(process.pid)))
 */
export async function buildHostBundle(outfile: string): Promise<() => Promise<void>> {
  await build({
    entryPoints: [path.join(ROOT, 'node', 'start.ts')],
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node24',
    packages: 'external',
    outfile,
    logLevel: 'warning',
    plugins: [
      {
        name: 'own-file-urls',
        setup(b) {
          b.onLoad({ filter: /\.ts$/ }, async (args) => {
            const source = await readFile(args.path, 'utf8');
            const contents = source.includes('import.meta')
              ? source
                  .replaceAll('import.meta.url', JSON.stringify(pathToFileURL(args.path).href))
                  .replaceAll('import.meta.dirname', JSON.stringify(path.dirname(args.path)))
              : source;
            return { contents, loader: 'ts' };
          });
        },
      },
    ],
  });
  return () => rm(outfile, { force: true });
}
