// `npm run bench:fanout` (and the fan-out part of `npm run bench`): live fan-out. SUBSCRIBERS graphql-ws clients watch
// one SKU on a real server process while a burst of SALES orders sells its whole stock over HTTP. Reports
//   freshness: per subscriber, from the last sale's commit to the moment it shows the final count (p50/p99/max);
//              the target is p99 <= 250 ms (a subscriber that is behind must get the newest count, not a backlog);
//   lag:       per delivered event, commit -> delivery (p50/p99/max), and how many events were delivered.
// Traffic stays on 127.0.0.1. Bounded: at most TIMEOUT_S seconds of waiting, SUBSCRIBERS x SALES deliveries.
// Env: DATABASE_URL (a server; the bench creates and drops its own database on it; embedded PostgreSQL when absent),
//      REDIS_URL (optional: Redis pubsub), SUBSCRIBERS (10000), SALES (50), CONCURRENCY (20), TIMEOUT_S (90),
//      FANOUT_SERVER_NODE_ARGS (extra node flags for the server, e.g. --cpu-prof).
import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import WebSocket from 'ws';
import { createBenchDatabase } from './database.js';
import { percentile } from '../kit/stats.js';
import { spawnServer } from '../kit/server.js';
import { benchProductionEnv } from './server.js';

export const FRESHNESS_TARGET_MS = 250;

export type FanoutOptions = {
  /** the database the server uses (already migrated) */
  databaseUrl: string;
  subscribers: number;
  sales: number;
  concurrency?: number;
  timeoutS?: number;
  /** extra environment for the server (e.g. REDIS_URL) */
  env?: Record<string, string>;
  nodeArgs?: string[];
  log?: (line: string) => void;
  signal?: AbortSignal;
};

export type FanoutResult = {
  subscribers: number;
  sales: number;
  sold: number;
  burstMs: number;
  /** subscribers that showed the final count before the timeout */
  fresh: number;
  /** min: the first subscriber (the relay's delay and one write), max - min: one pass over every socket */
  freshnessMs: { min: number; p50: number; p99: number; max: number };
  /** events delivered in all (conflation may deliver fewer than subscribers x sales, never fewer than needed) */
  deliveries: number;
  lagMs: { p50: number; p99: number; max: number };
  pubsub: 'redis' | 'in-process';
  /** the server's resident memory (VmRSS) before the subscribers connected and with all of them connected, bytes */
  memory: { idleBytes: number; connectedBytes: number; perSubscriberBytes: number };
};

/** A process's resident memory in bytes (Linux /proc), 0 where there is none. */
async function residentBytes(pid: number): Promise<number> {
  try {
    const status = await readFile(`/proc/${pid}/status`, 'utf8');
    const kb = /^VmRSS:\s+(\d+) kB/m.exec(status)?.[1];
    return kb ? Number(kb) * 1024 : 0;
  } catch {
    return 0;
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** One GraphQL request; one that failed in transit is sent again (safe for placeOrder: the key cannot order twice). */
async function gql(host: string, key: string, query: string, variables: unknown, attempts = 3): Promise<any> {
  try {
    const r = await fetch(`http://${host}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
      body: JSON.stringify({ query, variables }),
    });
    return await r.json();
  } catch (err) {
    if (attempts <= 1) throw err;
    return gql(host, key, query, variables, attempts - 1);
  }
}

/** One subscriber speaking graphql-transport-ws; calls onEvent(receivedAt, payload) per `next`. */
function subscriber(host: string, key: string, sku: string, onEvent: (at: number, data: any) => void) {
  return new Promise<WebSocket>((resolve, reject) => {
    const ws = new WebSocket(`ws://${host}/graphql`, 'graphql-transport-ws');
    ws.on('open', () =>
      ws.send(JSON.stringify({ type: 'connection_init', payload: { authorization: `Bearer ${key}` } })),
    );
    ws.on('message', (raw) => {
      const at = Date.now();
      const m = JSON.parse(String(raw));
      if (m.type === 'connection_ack') {
        ws.send(
          JSON.stringify({
            id: '1',
            type: 'subscribe',
            payload: {
              query: `subscription { availabilityChanged(skus: ["${sku}"]) { available version updatedAt } }`,
            },
          }),
        );
        resolve(ws);
      } else if (m.type === 'next') onEvent(at, m.payload.data.availabilityChanged);
    });
    ws.on('error', reject);
  });
}

/**
 * Starts a server on `databaseUrl`, connects the subscribers, sells a SKU's whole stock in a burst and measures.
 * @example const r = await runFanout({ databaseUrl, subscribers: 2000, sales: 50 })
 */
export async function runFanout(opts: FanoutOptions): Promise<FanoutResult> {
  const log = opts.log ?? ((s: string) => console.error(s));
  const key = `bench_storefront_${randomBytes(6).toString('hex')}`;
  const admin = `bench_admin_${randomBytes(6).toString('hex')}`;
  const sku = `FANOUT-${randomBytes(3).toString('hex')}`;
  const concurrency = opts.concurrency ?? 20;
  const timeoutS = opts.timeoutS ?? 90;
  const server = await spawnServer({
    // one storefront key opens every subscriber's socket here (a browser would use a public key, counted per address)
    env: {
      DATABASE_URL: opts.databaseUrl,
      API_KEYS: `storefront:${key},admin:${admin}`,
      DATABASE_POOL_SIZE: '20',
      MAX_SOCKETS_PER_CLIENT: String(opts.subscribers),
      ...benchProductionEnv(),
      ...opts.env,
    },
    nodeArgs: opts.nodeArgs,
    onUnexpectedExit: (why) => log(why),
  });
  const host = `127.0.0.1:${server.port}`;
  const sockets: WebSocket[] = [];
  try {
    const created = await gql(
      host,
      admin,
      `mutation($i: CreateProductInput!) { createProduct(input: $i) { userErrors { code } } }`,
      {
        i: { sku, name: 'Fan-out bench', priceAmount: 100, currencyCode: 'USD', initialStock: opts.sales },
      },
    );
    if (created.errors || created.data.createProduct.userErrors.length) throw new Error(JSON.stringify(created));

    const lags: number[] = [];
    const freshAt = new Map<number, number>(); // subscriber -> when it first showed the final count (0 left)
    let lastCommit = 0; // the last sale's commit: the final count's event carries its transaction's timestamp
    const idleBytes = await residentBytes(server.pid);
    const t0 = Date.now();
    for (let i = 0; i < opts.subscribers; i += 100) {
      if (opts.signal?.aborted) throw new Error('aborted');
      const batch = Array.from({ length: Math.min(100, opts.subscribers - i) }, (_, j) =>
        subscriber(host, key, sku, (at, e: { available: number; updatedAt: string }) => {
          lags.push(at - Date.parse(e.updatedAt));
          if (e.available === 0 && !freshAt.has(i + j)) {
            freshAt.set(i + j, at);
            lastCommit = Date.parse(e.updatedAt);
          }
        }),
      );
      sockets.push(...(await Promise.all(batch)));
      if ((i / 100) % 5 === 4) log(`fan-out: ${sockets.length} of ${opts.subscribers} subscribers connected`);
    }
    log(`fan-out: ${opts.subscribers} subscribers connected in ${Date.now() - t0} ms; selling ${opts.sales} units`);
    await sleep(500); // let the last subscriptions register
    const connectedBytes = await residentBytes(server.pid);

    const start = Date.now();
    let next = 0;
    let sold = 0;
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (next < opts.sales) {
          const i = next++;
          const r = await gql(
            host,
            key,
            `mutation($i: PlaceOrderInput!) { placeOrder(input: $i) { order { status } } }`,
            {
              i: { idempotencyKey: `fan-${i}`, customerId: `c-${i}`, lines: [{ sku, quantity: 1 }] },
            },
          );
          if (r.data?.placeOrder?.order?.status === 'RESERVED') sold++;
        }
      }),
    );
    const burstMs = Date.now() - start;
    const deadline = start + timeoutS * 1000;
    while (freshAt.size < opts.subscribers && Date.now() < deadline) {
      if (opts.signal?.aborted) throw new Error('aborted');
      await sleep(50);
    }
    const fresh = [...freshAt.values()].map((at) => Math.max(0, at - lastCommit)).sort((a, b) => a - b);
    // a subscriber that never showed the final count counts as the whole wait
    const missing = opts.subscribers - fresh.length;
    const all = [...fresh, ...Array.from({ length: missing }, () => timeoutS * 1000)];
    const sortedLags = [...lags].sort((a, b) => a - b);
    return {
      subscribers: opts.subscribers,
      sales: opts.sales,
      sold,
      burstMs,
      fresh: fresh.length,
      freshnessMs: { min: all[0] ?? 0, p50: percentile(all, 50), p99: percentile(all, 99), max: all.at(-1) ?? 0 },
      deliveries: lags.length,
      lagMs: { p50: percentile(sortedLags, 50), p99: percentile(sortedLags, 99), max: sortedLags.at(-1) ?? 0 },
      pubsub: opts.env?.REDIS_URL ? 'redis' : 'in-process',
      memory: {
        idleBytes,
        connectedBytes,
        perSubscriberBytes: Math.round((connectedBytes - idleBytes) / opts.subscribers),
      },
    };
  } finally {
    for (const s of sockets) s.terminate();
    await server.stop();
  }
}

export function formatFanout(r: FanoutResult): string {
  return [
    `fan-out: ${r.subscribers} subscribers x ${r.sold} sales (burst in ${r.burstMs} ms), ${r.pubsub} pubsub`,
    `  freshness (last sale's commit -> subscriber shows the final count, ms)  min ${r.freshnessMs.min}  p50 ${r.freshnessMs.p50}  p99 ${r.freshnessMs.p99}  max ${r.freshnessMs.max}` +
      `  (${r.fresh} of ${r.subscribers} showed it; target p99 <= ${FRESHNESS_TARGET_MS})`,
    `  events delivered ${r.deliveries} (at most ${r.subscribers * r.sold}: a subscriber that is behind gets the newest count only)`,
    `  lag per event (commit -> delivery, ms)  p50 ${r.lagMs.p50}  p99 ${r.lagMs.p99}  max ${r.lagMs.max}`,
    `  server memory (RSS) ${(r.memory.idleBytes / 2 ** 20).toFixed(0)} MiB idle, ${(r.memory.connectedBytes / 2 ** 20).toFixed(0)} MiB with every subscriber: ` +
      `${(r.memory.perSubscriberBytes / 1024).toFixed(1)} KiB per subscriber (socket, graphql-ws context, queue)`,
    "  commit time = the availability's updatedAt (the claiming transaction's timestamp); client and server share this machine's clock",
  ].join('\n');
}

const RESULT_PREFIX = 'FANOUT_RESULT ';

/**
 * runFanout in a child process of its own (`node --import tsx bench/fanout.ts`): the subscribers' sockets get a
 * fresh heap, as browsers would, instead of sharing the event loop and the garbage collector of a bench process that
 * has run every other round. Progress lines are passed to `log`; `signal` kills the child.
 * @example const r = await runFanoutProcess({ databaseUrl, subscribers: 2000, sales: 50 })
 */
export function runFanoutProcess(opts: {
  databaseUrl: string;
  subscribers: number;
  sales: number;
  log?: (line: string) => void;
  signal?: AbortSignal;
}): Promise<FanoutResult> {
  const log = opts.log ?? ((s: string) => console.error(s));
  return new Promise<FanoutResult>((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', fileURLToPath(import.meta.url)], {
      cwd: path.join(path.dirname(fileURLToPath(import.meta.url)), '..'),
      env: {
        ...process.env,
        FANOUT_DATABASE_URL: opts.databaseUrl,
        FANOUT_JSON: '1',
        SUBSCRIBERS: String(opts.subscribers),
        SALES: String(opts.sales),
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout!.on('data', (d) => (out += d));
    child.stderr!.on('data', (d) => {
      err += d;
      const lines = err.split('\n');
      err = lines.pop()!;
      for (const l of lines) if (l.trim()) log(l);
    });
    const abort = () => child.kill('SIGTERM');
    opts.signal?.addEventListener('abort', abort, { once: true });
    child.once('error', reject);
    child.once('exit', (code) => {
      opts.signal?.removeEventListener('abort', abort);
      const line = out.split('\n').find((l) => l.startsWith(RESULT_PREFIX));
      if (code === 0 && line) resolve(JSON.parse(line.slice(RESULT_PREFIX.length)) as FanoutResult);
      else reject(new Error(`the fan-out process exited with ${code}: ${(err + out).slice(-2000)}`));
    });
  });
}

async function main() {
  const num = (name: string, def: number) => {
    const v = Number(process.env[name] ?? def);
    if (!Number.isInteger(v) || v < 1) throw new Error(`${name} must be a positive integer`);
    return v;
  };
  // FANOUT_DATABASE_URL: run on that (migrated) database as it is, e.g. the flash-sale bench's; else a fresh one
  const given = process.env.FANOUT_DATABASE_URL;
  const db = given
    ? { url: given, drop: async () => {} }
    : await createBenchDatabase({ adminUrl: process.env.DATABASE_URL });
  try {
    const r = await runFanout({
      databaseUrl: db.url,
      subscribers: num('SUBSCRIBERS', 10_000),
      sales: num('SALES', 50),
      concurrency: num('CONCURRENCY', 20),
      timeoutS: num('TIMEOUT_S', 90),
      env: process.env.REDIS_URL ? { REDIS_URL: process.env.REDIS_URL } : {},
      nodeArgs: (process.env.FANOUT_SERVER_NODE_ARGS ?? '').split(' ').filter(Boolean),
    });
    // FANOUT_JSON=1: the result as one JSON line for a parent process (runFanoutProcess); progress goes to stderr
    console.log(process.env.FANOUT_JSON === '1' ? `${RESULT_PREFIX}${JSON.stringify(r)}` : formatFanout(r));
  } finally {
    await db.drop();
  }
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main().then(
    () => process.exit(0),
    (err) => {
      console.error(err);
      process.exit(1);
    },
  );
}
