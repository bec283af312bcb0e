// `npm run bench:edge`: availability reads through the worker in workerd (miniflare), edge cache on (TTL 2 s) versus
// off, on the same database through the Neon driver and a local WebSocket bridge. 127.0.0.1 only, bounded:
// BENCH_EDGE_REQUESTS (default 3000) reads per run, BENCH_EDGE_CONCURRENCY (default 16) in flight.
// Uses DATABASE_URL (a scratch database is created and dropped) or an embedded PostgreSQL under the OS temp dir.
import { createDb } from '../db/pool.js';
import { createBenchDatabase } from './database.js';
import { seedProducts } from '../db/catalog-store.js';
import { startLocalWorker, type LocalWorker } from '../kit/worker.js';
import { persistedRequest } from '../kit/persisted.js';
import { KEYS } from '../kit/keys.js';
import { percentile } from '../kit/stats.js';
import { DEFAULTS } from '../kit/config-defaults.js';

const REQUESTS = Number(process.env.BENCH_EDGE_REQUESTS ?? 3000);
const CONCURRENCY = Number(process.env.BENCH_EDGE_CONCURRENCY ?? 16);
const SKUS = Array.from({ length: 10 }, (_, i) => `BENCH-${i}`);

async function run(label: string, w: LocalWorker) {
  const states: Record<string, number> = {};
  const latencies: number[] = [];
  let next = 0;
  let failed = 0;
  const connectionsBefore = w.bridge.stats.connections;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < REQUESTS) {
        const i = next++;
        const t0 = performance.now();
        const res = await w.fetch(
          persistedRequest(
            'ProductAvailability',
            { sku: SKUS[i % SKUS.length] },
            KEYS.storefront,
            'GET',
            'http://edge.bench',
          ),
        );
        const body = (await res.json()) as { data?: { product?: unknown } };
        latencies.push(performance.now() - t0);
        if (res.status !== 200 || !body.data?.product) failed++;
        const state = res.headers.get('x-lastunit-cache') ?? 'NONE';
        states[state] = (states[state] ?? 0) + 1;
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  const served = (states.HIT ?? 0) + (states.STALE ?? 0);
  return {
    run: label,
    requests: REQUESTS,
    failed,
    'req/s': Math.round(REQUESTS / seconds),
    'hit rate': `${((100 * served) / REQUESTS).toFixed(1)}%`,
    'HIT/STALE/MISS': `${states.HIT ?? 0}/${states.STALE ?? 0}/${states.MISS ?? 0}`,
    'db connections': w.bridge.stats.connections - connectionsBefore,
    'p50 ms': +percentile(latencies, 50).toFixed(2),
    'p99 ms': +percentile(latencies, 99).toFixed(2),
  };
}

async function main() {
  const scratch = await createBenchDatabase({ adminUrl: process.env.DATABASE_URL });
  const workers: LocalWorker[] = [];
  try {
    const db = createDb({ connectionString: scratch.url, max: 2, timeouts: DEFAULTS.database.timeouts });
    await seedProducts(
      db,
      SKUS.map((sku) => ({ sku, name: `Bench ${sku}`, priceAmount: 1000, currency: 'USD', initialStock: 100 })),
    );
    await db.end();
    const cached = await startLocalWorker({
      databaseUrl: scratch.url,
      vars: { EDGE_CACHE_TTL_SECONDS: '2', EDGE_CACHE_SWR_SECONDS: '10' },
      name: 'bench-cached',
    });
    workers.push(cached);
    const uncached = await startLocalWorker({
      databaseUrl: scratch.url,
      vars: { EDGE_CACHE_TTL_SECONDS: '0' },
      name: 'bench-uncached',
    });
    workers.push(uncached);
    console.log(
      `edge cache bench: ${REQUESTS} availability reads over ${SKUS.length} SKUs, ${CONCURRENCY} in flight, workerd via miniflare`,
    );
    const rows = [await run('uncached (TTL 0)', uncached), await run('edge cache (TTL 2s, SWR 10s)', cached)];
    console.table(rows);
    const [u, c] = rows as [(typeof rows)[0], (typeof rows)[0]];
    console.log(
      `speed-up: ${(c['req/s'] / u['req/s']).toFixed(1)}x requests/s; database connections ${u['db connections']} -> ${c['db connections']}`,
    );
    if (u.failed || c.failed) process.exitCode = 1;
  } finally {
    for (const w of workers) await w.stop();
    await scratch.drop();
  }
}

await main();
