// `npm run bench:fanout`: live fan-out. SUBSCRIBERS graphql-ws clients watch one SKU on a real server process while a
// burst of SALES orders is placed over HTTP; reports commit-to-delivery lag (p50/p99/max) and deliveries/s.
// Traffic stays on 127.0.0.1. Bounded: at most TIMEOUT_S seconds, SUBSCRIBERS x SALES deliveries.
// Env: DATABASE_URL (a server; the bench creates and drops its own database on it; embedded PostgreSQL when absent),
//      REDIS_URL (optional: Redis pubsub), SUBSCRIBERS (2000), SALES (50), CONCURRENCY (20), TIMEOUT_S (90),
//      FANOUT_SERVER_NODE_ARGS (extra node flags for the server, e.g. --cpu-prof).
import { randomBytes } from 'node:crypto';
import WebSocket from 'ws';
import { createBenchDatabase } from './database.js';
import { percentile } from '../kit/stats.js';
import { spawnServer } from '../kit/server.js';

const num = (name: string, def: number) => {
  const v = Number(process.env[name] ?? def);
  if (!Number.isInteger(v) || v < 1) throw new Error(`${name} must be a positive integer`);
  return v;
};
const SUBSCRIBERS = num('SUBSCRIBERS', 2000);
const SALES = num('SALES', 50);
const CONCURRENCY = num('CONCURRENCY', 20);
const TIMEOUT_S = num('TIMEOUT_S', 90);
const KEY = `bench_storefront_${randomBytes(6).toString('hex')}`;
const ADMIN = `bench_admin_${randomBytes(6).toString('hex')}`;
const SKU = 'FANOUT-1';

async function startServer(databaseUrl: string) {
  const server = await spawnServer({
    // one storefront key opens every subscriber's socket here (a browser would use a public key, counted per address)
    env: { DATABASE_URL: databaseUrl, API_KEYS: `storefront:${KEY},admin:${ADMIN}`, DATABASE_POOL_SIZE: '20', MAX_SOCKETS_PER_CLIENT: String(SUBSCRIBERS) },
    // FANOUT_SERVER_NODE_ARGS: extra node flags for the server process, e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof"
    nodeArgs: (process.env.FANOUT_SERVER_NODE_ARGS ?? '').split(' ').filter(Boolean),
    onUnexpectedExit: (why) => console.error(why),
  });
  return { ...server, host: `127.0.0.1:${server.port}` };
}

/** One GraphQL request; a request that failed in transit (e.g. a reused keep-alive socket reset) is sent again,
 * which is safe for placeOrder: the same idempotency key cannot order twice. */
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
function subscriber(host: string, onEvent: (at: number, data: any) => void) {
  return new Promise<WebSocket>((resolve, reject) => {
    const ws = new WebSocket(`ws://${host}/graphql`, 'graphql-transport-ws');
    ws.on('open', () => ws.send(JSON.stringify({ type: 'connection_init', payload: { authorization: `Bearer ${KEY}` } })));
    ws.on('message', (raw) => {
      const at = Date.now();
      const m = JSON.parse(String(raw));
      if (m.type === 'connection_ack') {
        ws.send(JSON.stringify({ id: '1', type: 'subscribe', payload: { query: `subscription { availabilityChanged(skus: ["${SKU}"]) { available version updatedAt } }` } }));
        resolve(ws);
      } else if (m.type === 'next') onEvent(at, m.payload.data.availabilityChanged);
    });
    ws.on('error', reject);
  });
}

async function main() {
  const db = await createBenchDatabase({ adminUrl: process.env.DATABASE_URL });
  const server = await startServer(db.url);
  const sockets: WebSocket[] = [];
  try {
    const created = await gql(server.host, ADMIN, `mutation($i: CreateProductInput!) { createProduct(input: $i) { userErrors { code } } }`, {
      i: { sku: SKU, name: 'Fan-out bench', priceAmount: 100, currencyCode: 'USD', initialStock: SALES },
    });
    if (created.errors || created.data.createProduct.userErrors.length) throw new Error(JSON.stringify(created));

    const lags: number[] = [];
    let first = Infinity;
    let last = 0;
    const onEvent = (at: number, e: { updatedAt: string }) => {
      lags.push(at - Date.parse(e.updatedAt));
      last = at;
    };
    const t0 = Date.now();
    for (let i = 0; i < SUBSCRIBERS; i += 100) {
      sockets.push(...(await Promise.all(Array.from({ length: Math.min(100, SUBSCRIBERS - i) }, () => subscriber(server.host, onEvent)))));
    }
    console.log(`${SUBSCRIBERS} subscribers connected in ${Date.now() - t0} ms`);
    await new Promise((r) => setTimeout(r, 500)); // let the last subscriptions register

    const expected = SUBSCRIBERS * SALES;
    const start = Date.now();
    first = start;
    let next = 0;
    let sold = 0;
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        while (next < SALES) {
          const i = next++;
          const r = await gql(server.host, KEY, `mutation($i: PlaceOrderInput!) { placeOrder(input: $i) { order { status } } }`, {
            i: { idempotencyKey: `fan-${i}`, customerId: `c-${i}`, lines: [{ sku: SKU, quantity: 1 }] },
          });
          if (r.data?.placeOrder?.order?.status === 'RESERVED') sold++;
        }
      }),
    );
    const salesMs = Date.now() - start;
    const deadline = start + TIMEOUT_S * 1000;
    while (lags.length < expected && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    const sorted = [...lags].sort((a, b) => a - b);
    const seconds = Math.max(1, last - first) / 1000;
    console.log(
      [
        `fan-out: ${SUBSCRIBERS} subscribers x ${sold} sales (burst in ${salesMs} ms, concurrency ${CONCURRENCY})${process.env.REDIS_URL ? ', Redis pubsub' : ', in-process pubsub'}`,
        `  deliveries   ${lags.length} of ${expected}${lags.length < expected ? ` (INCOMPLETE after ${TIMEOUT_S} s)` : ''}`,
        `  lag (commit -> delivery, ms)  p50 ${percentile(sorted, 50)}  p99 ${percentile(sorted, 99)}  max ${sorted.at(-1)}`,
        `  deliveries/s ${Math.round(lags.length / seconds)}  (first sale to last delivery: ${Math.round(seconds * 1000)} ms)`,
        '  commit time = the event\'s updatedAt (the claiming transaction\'s timestamp); client and server share this machine\'s clock',
      ].join('\n'),
    );
  } finally {
    for (const s of sockets) s.terminate();
    await server.stop();
    await db.drop();
  }
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
