import pg from 'pg';
import type { Db } from './pool.js';

/** The channel the app NOTIFYs after its writes commit; relays LISTEN on it. */
export const OUTBOX_CHANNEL = 'lastunit_outbox';

export type OutboxEvent = {
  id: number;
  topic: string;
  aggregateKey: string;
  payload: Record<string, unknown>;
  /** for order_status events: the order as the API shows it (order_json), read once here for every subscriber */
  order: unknown | null;
};

type OutboxRow = { id: number; topic: string; aggregate_key: string; payload: Record<string, unknown>; order: unknown | null };

function toOutboxEvent(r: OutboxRow): OutboxEvent {
  return { id: r.id, topic: r.topic, aggregateKey: r.aggregate_key, payload: r.payload, order: r.order };
}

/**
 * One relay batch (I9): claims the oldest unpublished rows with FOR UPDATE SKIP LOCKED (so any number of relays may
 * run, none waits for another), hands them to `publish`, then marks them published in the same transaction.
 * At least once: if `publish` throws or the process dies before COMMIT, the rows stay unpublished and are claimed again.
 * Returns how many rows were published.
 * @example await publishOutboxBatch(db, 100, async (events) => { for (const e of events) await pubsub.publish(e) })
 */
export async function publishOutboxBatch(db: Db, limit: number, publish: (events: OutboxEvent[]) => Promise<void>): Promise<number> {
  return db.transaction(async (tx) => {
    const { rows } = await tx.query<OutboxRow>(
      `WITH claimed AS (
         SELECT id, topic, aggregate_key, payload FROM outbox
          WHERE published_at IS NULL ORDER BY id LIMIT $1
          FOR UPDATE SKIP LOCKED)
       SELECT c.id, c.topic, c.aggregate_key, c.payload,
              CASE WHEN c.topic = 'order_status' THEN order_json((c.payload->>'orderId')::uuid) END AS order
         FROM claimed c ORDER BY c.id`,
      [limit],
    );
    if (rows.length === 0) return 0;
    await publish(rows.map(toOutboxEvent));
    // only rows this transaction holds locked, so no other relay can have marked them meanwhile
    await tx.query(`UPDATE outbox SET published_at = now() WHERE id = ANY ($1::bigint[])`, [rows.map((r) => r.id)]);
    return rows.length;
  });
}

/** Count of rows not yet published (for tests and the relay's metric). */
export async function countUnpublished(db: Db): Promise<number> {
  const { rows } = await db.query<{ n: number }>(`SELECT count(*) AS n FROM outbox WHERE published_at IS NULL`);
  return rows[0]!.n;
}

/**
 * Wakes relays. Sent on its own, after the writes have committed: never inside the hot placeOrder transaction,
 * where NOTIFY's commit-time lock would serialize every committing writer.
 */
export async function notifyOutbox(db: Db): Promise<void> {
  await db.query(`SELECT pg_notify($1, '')`, [OUTBOX_CHANNEL]);
}

/**
 * A dedicated connection LISTENing on the outbox channel; `onNotify` runs on every notification. It reconnects
 * by itself after a lost connection (the relay's poll covers the gap). Returns a stop function.
 */
export function listenOutbox(connectionString: string, onNotify: () => void, onError: (err: unknown) => void = () => {}) {
  let client: pg.Client | undefined;
  let stopped = false;
  let retry: NodeJS.Timeout | undefined;
  const reconnectSoon = (c: pg.Client) => {
    c.end().catch(() => {});
    if (!stopped && client === c) {
      client = undefined;
      retry = setTimeout(connect, 1000);
    }
  };
  const connect = async () => {
    const c = new pg.Client({ connectionString, application_name: 'lastunit-relay-listen' });
    client = c;
    c.on('notification', () => onNotify());
    c.on('error', (err) => {
      onError(err);
      reconnectSoon(c);
    });
    try {
      await c.connect();
      await c.query(`LISTEN ${OUTBOX_CHANNEL}`);
      if (stopped) await c.end();
    } catch (err) {
      onError(err);
      reconnectSoon(c);
    }
  };
  void connect();
  return async () => {
    stopped = true;
    clearTimeout(retry);
    await client?.end().catch(() => {});
  };
}
