// The worker bundle, built once here for the tests that run or inspect it and for the edge bench.
import { build, type Metafile } from 'esbuild';
import path from 'node:path';
import { ROOT } from './root.js';

/**
 * edge/worker.ts as one ES module, resolved the way Workers resolve it (workerd/worker/browser conditions, no Node
 * built-ins): what miniflare runs in tests and the bench, and what test/worker-bundle.test.ts inspects.
 */
export async function bundleWorker(
  outfile = path.join(ROOT, 'test/artifacts/worker.mjs'),
): Promise<{ outfile: string; metafile: Metafile }> {
  const r = await build({
    entryPoints: [path.join(ROOT, 'edge/worker.ts')],
    bundle: true,
    format: 'esm',
    platform: 'neutral',
    target: 'es2022',
    conditions: ['workerd', 'worker', 'browser'],
    mainFields: ['browser', 'module', 'main'],
    outfile,
    metafile: true,
    logLevel: 'silent',
    // a Node built-in is not resolvable here: the build fails if anything reachable imports one
    external: [],
  });
  return { outfile, metafile: r.metafile };
}
