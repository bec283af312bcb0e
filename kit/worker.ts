// edge/worker.ts in workerd on this machine, for the edge tests and the edge bench.
import { Miniflare } from 'miniflare';
import path from 'node:path';
import { bundleWorker } from './bundle-worker.js';
import { ROOT } from './root.js';
import { startWsBridge, type WsBridge } from './ws-bridge.js';
import { KEYS } from './keys.js';

export type LocalWorker = {
  mf: Miniflare;
  bridge: WsBridge;
  fetch: (req: Request) => Promise<Response>;
  stop: () => Promise<void>;
};

/** The same API keys as the Node test app (test/support/app.ts, kit/keys.ts), as the worker's API_KEYS secret. */
export const WORKER_API_KEYS = `storefront:${KEYS.storefront},storefront:${KEYS.storefront2},partner:${KEYS.partner},admin:${KEYS.admin}`;

/**
 * edge/worker.ts, bundled, running in workerd (miniflare) against `databaseUrl` through a local WebSocket-to-TCP bridge,
 * i.e. the real Neon driver speaking to the real PostgreSQL.
 * @example const w = await startLocalWorker({ databaseUrl: t.dbUrl, vars: { EDGE_CACHE_TTL_SECONDS: '2' } })
 */
export async function startLocalWorker(opts: {
  databaseUrl: string;
  vars?: Record<string, string | undefined>;
  name?: string;
}): Promise<LocalWorker> {
  const { outfile } = await bundleWorker(
    path.join(ROOT, `test/artifacts/worker-${process.pid}-${opts.name ?? 'w'}.mjs`),
  );
  const db = new URL(opts.databaseUrl);
  const bridge = await startWsBridge({ host: db.hostname, port: Number(db.port || 5432) });
  const mf = new Miniflare({
    modules: true,
    scriptPath: outfile,
    compatibilityDate: '2025-09-01',
    // a var given as undefined is left unset (to see the worker's own default)
    bindings: Object.fromEntries(
      Object.entries({
        DATABASE_URL: opts.databaseUrl,
        API_KEYS: WORKER_API_KEYS,
        NEON_WS_PROXY: bridge.hostPort,
        NODE_ENV: 'test',
        ...opts.vars,
      }).filter((e): e is [string, string] => e[1] !== undefined),
    ),
  });
  await mf.ready;
  return {
    mf,
    bridge,
    fetch: async (req) => {
      const body = req.method === 'GET' || req.method === 'HEAD' ? undefined : await req.text();
      return (await mf.dispatchFetch(req.url, {
        method: req.method,
        headers: Object.fromEntries(req.headers),
        body,
      })) as unknown as Response;
    },
    stop: async () => {
      await mf.dispose();
      await bridge.close();
    },
  };
}
