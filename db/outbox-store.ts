// The transactional outbox (I9): the relay's claim of unpublished rows, their events parsed by topic, and the
// NOTIFY / LISTEN that wakes relays after a commit.
import pg from 'pg';
import { z } from 'zod';
import type { Db } from './pool.js';
import { parseRow, parseRows } from './rows.js';
import { OrderDocument } from './order-document.js';

/** The PostgreSQL notification the app sends after its writes commit (NOTIFY); relays LISTEN for it. */
export const OUTBOX_NOTIFICATION = 'lastunit_outbox';

/** An availability event, exactly as emit_availability() (db/functions/010_events.sql) writes it. */
const AvailabilityEvent = z.object({
  sku: z.string(),
  available: z.number(),
  soldOut: z.boolean(),
  version: z.number(),
  updatedAt: z.string(),
});
export type AvailabilityEvent = z.infer<typeof AvailabilityEvent>;
const OrderStatusPayload = z.object({
  orderId: z.string(),
  clientId: z.string(),
  status: z.string(),
  updatedAt: z.string(),
});
/** An order-status event: emit_order_status()'s payload and the order as the API shows it (order_json), read once. */
export type OrderStatusEvent = z.infer<typeof OrderStatusPayload> & { order: OrderDocument | null };

const DropEntryPayload = z.object({
  entryId: z.string(),
  dropId: z.string(),
  clientId: z.string(),
  state: z.string(),
  updatedAt: z.string(),
});
/** A drop-entry event: emit_drop_entries()'s payload and the entry as the API shows it (drop_entry_json), read once. */
export type DropEntryEvent = z.infer<typeof DropEntryPayload> & { entry: unknown };

/** What subscribers hear of an outbox row; rows of other topics are published to nobody. */
export type OutboxMessage =
  | { topic: 'availability'; event: AvailabilityEvent }
  | { topic: 'order_status'; event: OrderStatusEvent }
  | { topic: 'drop_entry'; event: DropEntryEvent };
/** `ageSeconds`: how long ago the row's transaction wrote it, by the database's clock, when the relay claimed it. */
export type OutboxEvent = {
  id: number;
  topic: string;
  aggregateKey: string;
  message: OutboxMessage | null;
  ageSeconds: number;
};

const OutboxRow = z.object({
  id: z.number(),
  topic: z.string(),
  aggregate_key: z.string(),
  payload: z.unknown(),
  order: OrderDocument.nullable(),
  entry: z.unknown(),
  age_seconds: z.number(),
});

function toOutboxEvent(r: z.infer<typeof OutboxRow>): OutboxEvent {
  const source = `the outbox row ${r.id} (${r.topic})`;
  const message: OutboxMessage | null =
    r.topic === 'availability'
      ? { topic: 'availability', event: parseRow(AvailabilityEvent, r.payload, source) }
      : r.topic === 'order_status'
        ? { topic: 'order_status', event: { ...parseRow(OrderStatusPayload, r.payload, source), order: r.order } }
        : r.topic === 'drop_entry'
          ? { topic: 'drop_entry', event: { ...parseRow(DropEntryPayload, r.payload, source), entry: r.entry } }
          : null;
  return { id: r.id, topic: r.topic, aggregateKey: r.aggregate_key, message, ageSeconds: r.age_seconds };
}

/**
 * One relay batch (I9), as three short transactions so that none is open while `publish` runs (it calls Redis): the
 * oldest unpublished rows no other relay holds are leased for `leaseMs` (claim_outbox_batch, SKIP LOCKED: any number
 * of relays may run, none waits for another), handed to `publish` with no transaction open, then marked published.
 * At least once: if `publish` throws, the lease is given back at once and the rows are claimed again; if the process
 * dies before the mark, they are claimed again when the lease ends. Returns how many rows were published.
 * @example await publishOutboxBatch(db, 100, 5000, async (events) => { for (const e of events) await pubsub.publish(e) })
 */
export async function publishOutboxBatch(
  db: Db,
  limit: number,
  leaseMs: number,
  publish: (events: OutboxEvent[]) => Promise<void>,
): Promise<number> {
  const { rows } = await db.run(
    `SELECT id, topic, aggregate_key, payload, age_seconds, "order", entry
       FROM claim_outbox_batch(p_limit => $1, p_lease_ms => $2)`,
    [limit, leaseMs],
  );
  if (rows.length === 0) return 0;
  const events = parseRows(OutboxRow, rows, 'the outbox').map(toOutboxEvent);
  const ids = events.map((e) => e.id);
  try {
    await publish(events);
  } catch (err) {
    // given back for the next claim; if even that fails, the lease runs out
    await db.run(`SELECT end_outbox_lease(p_ids => $1::bigint[], p_published => false)`, [ids]).catch(() => {});
    throw err;
  }
  await db.run(`SELECT end_outbox_lease(p_ids => $1::bigint[], p_published => true)`, [ids]);
  return events.length;
}

/** Count of rows not yet published (for tests and the relay's metric). */
export async function countUnpublished(db: Db): Promise<number> {
  const { rows } = await db.query(`SELECT count(*) AS n FROM outbox WHERE published_at IS NULL`);
  return parseRow(z.object({ n: z.number() }), rows[0], 'the unpublished count').n;
}

/**
 * Wakes relays. Sent on its own, after the writes have committed: never inside the hot placeOrder transaction,
 * where NOTIFY's commit-time lock would serialize every committing writer.
 */
export async function notifyOutbox(db: Db): Promise<void> {
  await db.query(`SELECT pg_notify($1, '')`, [OUTBOX_NOTIFICATION]);
}

/**
 * A dedicated connection LISTENing for the outbox notification; `onNotify` runs on every notification. It reconnects
 * by itself after a lost connection (the relay's poll covers the gap). Returns a stop function.
 */
export function listenOutbox(
  connectionString: string,
  onNotify: () => void,
  onError: (err: unknown) => void = () => {},
) {
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
      await c.query(`LISTEN ${OUTBOX_NOTIFICATION}`);
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
