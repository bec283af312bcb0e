// A fulfillment service that ships each confirmed order exactly once (docs/events.md, "Writing an idempotent
// consumer"): it verifies lastunit's webhooks with the `standardwebhooks` package, and records the webhook-id and the
// shipment in ONE transaction of its own database, so a redelivery (or the same event from the feed) answers 2xx
// without shipping again. Its tables are its own: fulfillment_processed (webhook-ids) and fulfillment_shipments.
import http from 'node:http';
import pg from 'pg';
import { Webhook } from 'standardwebhooks';

const MAX_BODY = 1_048_576;

export const SCHEMA = `
  CREATE TABLE IF NOT EXISTS fulfillment_processed (
    webhook_id   text PRIMARY KEY,
    type         text NOT NULL,
    processed_at timestamptz NOT NULL DEFAULT now()
  );
  CREATE TABLE IF NOT EXISTS fulfillment_shipments (
    order_id     uuid PRIMARY KEY,
    webhook_id   text NOT NULL REFERENCES fulfillment_processed (webhook_id),
    lines        jsonb NOT NULL,
    shipped_at   timestamptz NOT NULL DEFAULT now()
  );
  CREATE TABLE IF NOT EXISTS fulfillment_feed_cursor (
    only_row boolean PRIMARY KEY DEFAULT true CHECK (only_row),
    cursor   text
  );`;

export type LastunitEvent = { id: string; type: string; sequence: number; data: { id?: string; lines?: unknown } };

/**
 * Applies one event once: the id recorded and, for order.confirmed, the shipment, in one transaction. Returns
 * 'shipped', 'duplicate' (seen before: nothing done) or 'recorded' (another type). `afterCommit` runs between the
 * commit and the answer (the crash test kills the process there).
 */
export async function applyEvent(pool: pg.Pool, e: LastunitEvent): Promise<'shipped' | 'duplicate' | 'recorded'> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    const first = await client.query(
      'INSERT INTO fulfillment_processed (webhook_id, type) VALUES ($1, $2) ON CONFLICT DO NOTHING',
      [e.id, e.type],
    );
    let outcome: 'shipped' | 'duplicate' | 'recorded' = first.rowCount === 1 ? 'recorded' : 'duplicate';
    if (outcome === 'recorded' && e.type === 'order.confirmed' && e.data.id) {
      // the order id is a key too: a second order.confirmed of one order (it cannot happen twice, but) ships nothing
      const shipped = await client.query(
        'INSERT INTO fulfillment_shipments (order_id, webhook_id, lines) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING',
        [e.data.id, e.id, JSON.stringify(e.data.lines ?? [])],
      );
      if (shipped.rowCount === 1) outcome = 'shipped';
    }
    await client.query('COMMIT');
    return outcome;
  } catch (err) {
    await client.query('ROLLBACK').catch(() => {});
    throw err;
  } finally {
    client.release();
  }
}

/**
 * The webhook receiver: POST any path. 401 for a bad signature, 2xx once the event is applied (or was already).
 * @example const s = await startFulfillment({ databaseUrl, secret: 'whsec_...', port: 0 })
 */
export async function startFulfillment(o: {
  databaseUrl: string;
  secret: string;
  port: number;
  afterCommit?: (outcome: string) => void;
}) {
  const pool = new pg.Pool({ connectionString: o.databaseUrl, max: 10 });
  await pool.query(SCHEMA);
  const wh = new Webhook(o.secret);
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > MAX_BODY) req.destroy();
      else chunks.push(c);
    });
    req.on('end', async () => {
      const raw = Buffer.concat(chunks).toString('utf8');
      let event: LastunitEvent;
      try {
        event = wh.verify(raw, req.headers as Record<string, string>) as LastunitEvent;
      } catch {
        res.writeHead(401).end('bad signature');
        return;
      }
      try {
        const outcome = await applyEvent(pool, event);
        o.afterCommit?.(outcome);
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ outcome }));
      } catch {
        res.writeHead(500).end('not applied'); // nothing committed: lastunit retries
      }
    });
  });
  await new Promise<void>((r) => server.listen(o.port, '127.0.0.1', r));
  const port = (server.address() as { port: number }).port;
  return {
    url: `http://127.0.0.1:${port}/webhooks/lastunit`,
    port,
    pool,
    async stop() {
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
      await pool.end();
    },
  };
}

/**
 * Catch-up from the feed (after an outage, faster than waiting for the retries): pages `events(after)` from the stored
 * cursor with an admin or partner key, applying each order.confirmed through the same processed-ids table, and stores
 * the cursor. Returns how many events it read.
 */
export async function catchUpFromFeed(pool: pg.Pool, graphqlUrl: string, apiKey: string): Promise<number> {
  const { rows } = await pool.query('SELECT cursor FROM fulfillment_feed_cursor');
  let cursor: string | null = rows[0]?.cursor ?? null;
  let read = 0;
  for (;;) {
    const res = await fetch(graphqlUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${apiKey}` },
      body: JSON.stringify({
        query: `query($after: String) { events(after: $after, first: 30, types: [ORDER_CONFIRMED]) {
                  edges { node { id type sequence data } } pageInfo { hasNextPage endCursor } } }`,
        variables: { after: cursor },
      }),
    });
    const body = (await res.json()) as {
      data: {
        events: {
          edges: { node: { id: string; type: string; sequence: number; data: string } }[];
          pageInfo: { hasNextPage: boolean; endCursor: string | null };
        };
      };
    };
    if (!body.data) throw new Error(`the feed answered ${res.status}: ${JSON.stringify(body)}`);
    const page = body.data.events;
    for (const { node } of page.edges) {
      await applyEvent(pool, {
        id: node.id,
        type: 'order.confirmed',
        sequence: node.sequence,
        data: JSON.parse(node.data),
      });
      read++;
    }
    if (page.pageInfo.endCursor) {
      cursor = page.pageInfo.endCursor;
      await pool.query(
        'INSERT INTO fulfillment_feed_cursor (only_row, cursor) VALUES (true, $1) ON CONFLICT (only_row) DO UPDATE SET cursor = $1',
        [cursor],
      );
    }
    if (!page.pageInfo.hasNextPage) return read;
  }
}
