// OpenTelemetry traces (docs/operations.md) through a real server process and a local OTLP/HTTP receiver (a small node
// http server in this file that keeps every span it is sent): a placeOrder is one trace from the HTTP request through
// the resolver to each SQL statement, and the request's log line carries its trace id. Without
// OTEL_EXPORTER_OTLP_ENDPOINT nothing is sent.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createTestDatabase, type TestDatabase } from './support/db.js';
import { spawnServer, type ServerProcess } from '../kit/server.js';
import { KEYS, CREATE_PRODUCT, PLACE_ORDER } from './support/app.js';
import { sqlSpanName } from '../common/tracing.js';

type OtlpSpan = {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes?: { key: string; value: { stringValue?: string } }[];
};
const SERVER = 2;
const CLIENT = 3;
const API_KEYS = `storefront:${KEYS.storefront},admin:${KEYS.admin}`;

describe('OpenTelemetry traces', () => {
  let tdb: TestDatabase;
  let receiver: Server;
  let host: ServerProcess;
  const spans: OtlpSpan[] = [];
  let requests = 0;
  beforeAll(async () => {
    tdb = await createTestDatabase({ max: 2 });
    receiver = createServer((req, res) => {
      let body = '';
      req.on('data', (c) => (body += c));
      req.on('end', () => {
        if (req.url === '/v1/traces') {
          requests++;
          const doc = JSON.parse(body) as { resourceSpans: { scopeSpans: { spans: OtlpSpan[] }[] }[] };
          for (const rs of doc.resourceSpans) for (const ss of rs.scopeSpans) spans.push(...ss.spans);
        }
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      });
    });
    await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
    host = await spawnServer({
      env: {
        DATABASE_URL: tdb.url,
        API_KEYS,
        LOG_LEVEL: 'debug',
        OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`,
      },
    });
  });
  afterAll(async () => {
    await host?.stop();
    await new Promise((r) => receiver?.close(r));
    await tdb?.drop();
  });

  const gql = async (query: string, variables: Record<string, unknown>, key: string) =>
    (await (
      await fetch(host.endpoint, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
        body: JSON.stringify({ query, variables }),
      })
    ).json()) as any;

  it('sends one trace per placeOrder: HTTP request -> resolver -> every SQL statement, trace id in the log line', async () => {
    const created = await gql(
      CREATE_PRODUCT,
      { input: { sku: 'OTEL-1', name: 'Traced', priceAmount: 500, currencyCode: 'USD', initialStock: 3 } },
      KEYS.admin,
    );
    expect(created.data.createProduct.userErrors).toEqual([]);
    const placed = await gql(
      PLACE_ORDER,
      { input: { customerId: 'otel-buyer', idempotencyKey: 'otel-1', lines: [{ sku: 'OTEL-1', quantity: 1 }] } },
      KEYS.storefront,
    );
    expect(placed.data.placeOrder.userErrors).toEqual([]);

    const resolver = () => spans.find((s) => s.name === 'graphql Mutation.placeOrder');
    await expect.poll(() => resolver(), { timeout: 15_000 }).toBeDefined();
    const r = resolver()!;
    const inTrace = spans.filter((s) => s.traceId === r.traceId);
    const server = inTrace.find((s) => s.spanId === r.parentSpanId)!;
    expect(server).toMatchObject({ name: 'HTTP POST /graphql', kind: SERVER });
    // every SQL statement of the order is a client span below the resolver (directly or through another span)
    const byId = new Map(inTrace.map((s) => [s.spanId, s]));
    const under = (s: OtlpSpan, ancestor: OtlpSpan): boolean => {
      for (let p = s.parentSpanId && byId.get(s.parentSpanId); p; p = p.parentSpanId && byId.get(p.parentSpanId))
        if (p.spanId === ancestor.spanId) return true;
      return false;
    };
    const sql = inTrace.filter(
      (s) =>
        s.kind === CLIENT &&
        s.attributes?.some((a) => a.key === 'db.system.name' && a.value.stringValue === 'postgresql'),
    );
    expect(sql.length).toBeGreaterThan(0);
    expect(sql.filter((s) => !under(s, r)).map((s) => s.name)).toEqual([]);
    const texts = sql.map((s) => s.attributes!.find((a) => a.key === 'db.query.text')!.value.stringValue!);
    expect(texts.some((t) => /place_order|claim/i.test(t))).toBe(true);
    // no statement carries its values: the text is the parameterised statement
    expect(texts.join('\n')).not.toContain('otel-buyer');

    // the request's log line names the same trace
    await expect.poll(() => host.output(), { timeout: 5_000 }).toContain(`"trace_id":"${r.traceId}"`);
    expect(requests).toBeGreaterThan(0);
  });

  it('names SQL spans by what they call or touch, never by their values', () => {
    expect(sqlSpanName('SELECT place_order(p_client_id => $1, p_lines => $2) AS r')).toBe('SELECT place_order');
    expect(sqlSpanName('UPDATE outbox SET published_at = now() WHERE id = ANY ($1)')).toBe('UPDATE outbox');
    expect(sqlSpanName('BEGIN')).toBe('BEGIN');
  });

  it('logs no trace id from a server started without OTEL_EXPORTER_OTLP_ENDPOINT (no SDK, no span)', async () => {
    const db2 = await createTestDatabase({ max: 1 });
    const plain = await spawnServer({ env: { DATABASE_URL: db2.url, API_KEYS, LOG_LEVEL: 'debug' } });
    try {
      const r = await fetch(plain.endpoint, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${KEYS.admin}` },
        body: JSON.stringify({ query: '{ stockLevels { sku } }' }),
      });
      expect(r.status).toBe(200);
    } finally {
      await plain.stop();
      await db2.drop();
    }
    expect(plain.output()).not.toContain('trace_id');
  });
});
