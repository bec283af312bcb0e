// `npm run bench:events`: a flash sale of 1,000 orders delivered as webhooks to a fulfillment consumer
// (examples/fulfillment/consumer.ts), through the real server (a child process, production profile) on a fresh
// database. 1,000 buyers race for 300 units; each held order is confirmed (9 in 10) or released. The consumer verifies
// every delivery with `standardwebhooks`, ships each order.confirmed once, and loses its answer for 5% of first
// deliveries AFTER its commit (so they come again). It prints the delivery log (events delivered, duplicates shipped,
// out-of-order per order, p50/p99 commit-to-delivery latency) and writes it to bench/results/ (git-ignored); exit 1
// when a duplicate shipped, an order's events arrived out of order, or an event was not delivered. Localhost only.
//   DATABASE_URL: create the databases there (else an embedded PostgreSQL).
import http from 'node:http';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { Webhook } from 'standardwebhooks';
import { createBenchDatabase } from './database.js';
import { startServer } from './server.js';
import { applyEvent, SCHEMA, type LastunitEvent } from '../examples/fulfillment/consumer.js';

const ORDERS = Number(process.env.BENCH_EVENTS_ORDERS ?? 1000);
const UNITS = Number(process.env.BENCH_EVENTS_UNITS ?? 300);
const CONCURRENCY = 32;
const log = (s: string) => console.log(s);

const quantile = (xs: number[], q: number) => {
  if (xs.length === 0) return null;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))]!;
};

async function main() {
  const api = await createBenchDatabase({ adminUrl: process.env.DATABASE_URL, log });
  const shopDb = await createBenchDatabase({ adminUrl: process.env.DATABASE_URL, log });
  const shop = new pg.Pool({ connectionString: shopDb.url, max: 16 });
  await shop.query(SCHEMA);
  let srv: Awaited<ReturnType<typeof startServer>> | undefined;
  let receiver: http.Server | undefined;
  try {
    // the consumer: verify, apply once, answer; 5% of first arrivals lose their answer after the commit
    const arrivals: {
      id: string;
      type: string;
      orderId: string | null;
      sequence: number;
      at: number;
      createdAt: number;
    }[] = [];
    const seen = new Set<string>();
    let secret = '';
    receiver = http.createServer((req, res) => {
      let raw = '';
      req.on('data', (c) => (raw += c));
      req.on('end', async () => {
        try {
          const e = new Webhook(secret).verify(raw, req.headers as Record<string, string>) as LastunitEvent & {
            timestamp: string;
          };
          arrivals.push({
            id: e.id,
            type: e.type,
            orderId: e.data.id ?? null,
            sequence: e.sequence,
            at: Date.now(),
            createdAt: Date.parse(e.timestamp),
          });
          await applyEvent(shop, e);
          const first = !seen.has(e.id);
          seen.add(e.id);
          if (first && Math.random() < 0.05) return req.socket.destroy(); // committed, answer lost: it comes again
          res.writeHead(204).end();
        } catch {
          res.writeHead(401).end();
        }
      });
    });
    await new Promise<void>((r) => receiver!.listen(0, '127.0.0.1', r));
    const hookUrl = `http://127.0.0.1:${(receiver.address() as { port: number }).port}/webhooks/lastunit`;

    srv = await startServer({
      databaseUrl: api.url,
      extraEnv: {
        RATE_LIMIT_PER_WINDOW: '0',
        RATE_LIMIT_BUYER_PER_WINDOW: '0',
        WEBHOOK_ALLOW_PRIVATE_URLS: 'true',
        WEBHOOK_RETRY_SCHEDULE: '200ms,500ms,1s,2s,5s',
        WEBHOOK_POLL_MS: '20',
        WEBHOOK_CONCURRENCY_PER_ENDPOINT: '16',
      },
    });
    const s = srv;
    const gql = async (key: string, query: string, variables: Record<string, unknown>) => {
      const res = await fetch(s.endpoint, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
        body: JSON.stringify({ query, variables }),
      });
      const body = (await res.json()) as any;
      if (res.status !== 200 || body.errors)
        throw new Error(`GraphQL fault ${res.status}: ${JSON.stringify(body).slice(0, 300)}`);
      return body.data;
    };
    await gql(s.keys.admin, `mutation($i: CreateProductInput!) { createProduct(input: $i) { userErrors { code } } }`, {
      i: { sku: 'FLASH', name: 'Flash', priceAmount: 1000, currencyCode: 'USD', initialStock: UNITS },
    });
    const created = await gql(
      s.keys.admin,
      `mutation($i: CreateWebhookEndpointInput!) { createWebhookEndpoint(input: $i) { endpoint { id } secret userErrors { message } } }`,
      {
        i: {
          url: hookUrl,
          eventTypes: ['ORDER_RESERVED', 'ORDER_CONFIRMED', 'ORDER_RELEASED', 'ORDER_REJECTED'],
        },
      },
    );
    if (created.createWebhookEndpoint.userErrors.length) throw new Error(JSON.stringify(created.createWebhookEndpoint));
    secret = created.createWebhookEndpoint.secret;
    const endpointId = created.createWebhookEndpoint.endpoint.id as string;

    log(`flash sale: ${ORDERS} orders for ${UNITS} units, webhooks to ${hookUrl}`);
    const started = Date.now();
    let next = 0;
    const confirmed = new Set<string>();
    const worker = async () => {
      while (next < ORDERS) {
        const i = next++;
        const d = await gql(
          s.keys.storefront,
          `mutation($i: PlaceOrderInput!) { placeOrder(input: $i) { order { id status } } }`,
          { i: { idempotencyKey: `flash-${i}`, customerId: `buyer-${i}`, lines: [{ sku: 'FLASH', quantity: 1 }] } },
        );
        const o = d.placeOrder.order;
        if (o?.status !== 'RESERVED') continue;
        if (i % 10 === 9) {
          await gql(
            s.keys.storefront,
            `mutation($i: ReleaseReservationInput!) { releaseReservation(input: $i) { order { id } } }`,
            {
              i: { orderId: o.id },
            },
          );
        } else {
          await gql(
            s.keys.storefront,
            `mutation($i: ConfirmOrderInput!) { confirmOrder(input: $i) { order { status } } }`,
            {
              i: { orderId: o.id, paymentReference: `pay-${i}` },
            },
          );
          confirmed.add(o.id);
        }
      }
    };
    await Promise.all(Array.from({ length: CONCURRENCY }, worker));
    const saleMs = Date.now() - started;

    const check = new pg.Pool({ connectionString: api.url, max: 2 });
    const pending = async () =>
      Number(
        (
          await check.query(
            `SELECT count(*)::int AS n FROM webhook_deliveries WHERE endpoint_id = $1 AND status <> 'DELIVERED'`,
            [endpointId],
          )
        ).rows[0].n,
      );
    const total = Number(
      (await check.query(`SELECT count(*)::int AS n FROM events WHERE type LIKE 'order.%'`)).rows[0].n,
    );
    const deadline = Date.now() + 120_000;
    while (((await pending()) > 0 || seen.size < total) && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 100));
    await check.end();

    // the delivery log
    const firstArrival = new Map<string, (typeof arrivals)[number]>();
    for (const a of arrivals) if (!firstArrival.has(a.id)) firstArrival.set(a.id, a);
    const perOrder = new Map<string, number>();
    let outOfOrder = 0;
    for (const a of firstArrival.values()) {
      if (!a.orderId) continue;
      if (a.sequence !== (perOrder.get(a.orderId) ?? 0) + 1) outOfOrder++;
      perOrder.set(a.orderId, a.sequence);
    }
    const shipments = (
      await shop.query('SELECT order_id, count(*)::int AS n FROM fulfillment_shipments GROUP BY order_id')
    ).rows as {
      order_id: string;
      n: number;
    }[];
    const duplicatesShipped =
      shipments.reduce((sum, r) => sum + (r.n - 1), 0) + Math.max(0, shipments.length - confirmed.size);
    const notShipped = [...confirmed].filter((id) => !shipments.some((r) => r.order_id === id)).length;
    const latencies = [...firstArrival.values()].map((a) => a.at - a.createdAt);
    const result = {
      orders: ORDERS,
      units: UNITS,
      saleMs,
      eventsWritten: total,
      eventsDelivered: firstArrival.size,
      deliveriesReceived: arrivals.length,
      redeliveriesReceived: arrivals.length - firstArrival.size,
      confirmedOrders: confirmed.size,
      shipped: shipments.length,
      duplicatesShipped,
      notShipped,
      outOfOrderPerOrder: outOfOrder,
      latencyP50Ms: quantile(latencies, 0.5),
      latencyP99Ms: quantile(latencies, 0.99),
    };
    const rows: [string, string | number | null][] = [
      ['orders placed / units', `${ORDERS} / ${UNITS}`],
      ['sale took', `${saleMs} ms`],
      ['events written (order.*)', total],
      ['events delivered', result.eventsDelivered],
      ['deliveries received (incl. redeliveries)', `${result.deliveriesReceived} (${result.redeliveriesReceived})`],
      ['orders confirmed / shipped', `${confirmed.size} / ${shipments.length}`],
      ['duplicates shipped', duplicatesShipped],
      ['out-of-order deliveries per order', outOfOrder],
      ['commit-to-delivery p50', `${result.latencyP50Ms} ms`],
      ['commit-to-delivery p99', `${result.latencyP99Ms} ms`],
    ];
    const width = Math.max(...rows.map(([k]) => k.length));
    const table = rows.map(([k, v]) => `| ${k.padEnd(width)} | ${String(v)} |`).join('\n');
    log(table);
    const dir = path.join(path.dirname(fileURLToPath(import.meta.url)), 'results');
    await mkdir(dir, { recursive: true });
    const file = path.join(dir, `events-${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
    await writeFile(file, `${JSON.stringify({ ...result, table }, null, 2)}\n`);
    log(`written: ${path.relative(process.cwd(), file)}`);
    const ok = duplicatesShipped === 0 && outOfOrder === 0 && notShipped === 0 && result.eventsDelivered === total;
    if (!ok) {
      log('FAILED: a duplicate shipped, an order went out of order, or an event was not delivered');
      process.exitCode = 1;
    }
  } finally {
    await srv?.stop();
    await new Promise<void>((r) => (receiver ? receiver.close(() => r()) : r()));
    await shop.end();
    await api.drop();
    await shopDb.drop();
  }
}

await main();
