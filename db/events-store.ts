// The event log (docs/events.md): the sequencer step, the feed read in commit order, one event, and retention. Events
// are written by triggers in db/functions/100_event-log.sql, never from here.
import { z } from 'zod';
import type { Db, Queryable } from './pool.js';
import { parseRow, parseRows } from './rows.js';

/** Every event type, as stored and as sent (`type` of a webhook body). */
export const EVENT_TYPES = [
  'order.reserved',
  'order.awaiting_payment',
  'order.confirmed',
  'order.released',
  'order.expired',
  'order.rejected',
  'order.cancelled',
  'payment.captured',
  'payment.refunded',
  'stock.changed',
  'channel.oversold',
  'webhook_endpoint.disabled',
] as const;
export type EventType = (typeof EVENT_TYPES)[number];

export type StoredEvent = {
  id: string;
  type: EventType;
  position: number;
  sequence: number;
  orderId: string | null;
  clientId: string | null;
  sku: string | null;
  data: Record<string, unknown>;
  createdAt: Date;
};

const EventRow = z.object({
  id: z.string(),
  type: z.enum(EVENT_TYPES),
  position: z.coerce.number().nullable(),
  sequence: z.coerce.number(),
  order_id: z.string().nullable(),
  client_id: z.string().nullable(),
  sku: z.string().nullable(),
  data: z.record(z.string(), z.unknown()),
  created_at: z.date(),
});
// an event's feed position is a row of its own (event_positions, db/migrations/0130_event-positions.sql)
const COLUMNS = 'e.id, e.type, p.position, e.sequence, e.order_id, e.client_id, e.sku, e.data, e.created_at';

function toEvent(r: z.infer<typeof EventRow>): StoredEvent {
  return {
    id: r.id,
    type: r.type,
    position: r.position ?? 0,
    sequence: r.sequence,
    orderId: r.order_id,
    clientId: r.client_id,
    sku: r.sku,
    data: r.data,
    createdAt: r.created_at,
  };
}

/** One sequencer step (`sequence_events()`): positions for committed events, deliveries for their endpoints. */
export async function sequenceEvents(db: Db, limit = 1000): Promise<number> {
  const { rows } = await db.run('SELECT sequence_events(p_limit => $1) AS n', [limit]);
  return parseRow(z.object({ n: z.number() }), rows[0], 'sequence_events()').n;
}

/**
 * Sequenced events after `afterPosition` in position (commit) order, `first + 1` of them (the extra one says there is a
 * next page). `clientId`: only that client's orders' events; `types`: only those.
 */
export async function pageEvents(
  db: Queryable,
  a: { afterPosition: number; first: number; clientId: string | null; types: readonly EventType[] | null },
): Promise<StoredEvent[]> {
  const { rows } = await db.query(
    `SELECT ${COLUMNS} FROM event_positions p JOIN events e ON e.n = p.n
      WHERE p.position > $1 AND ($2::text IS NULL OR p.client_id = $2) AND ($3::text[] IS NULL OR e.type = ANY ($3))
      ORDER BY p.position LIMIT $4`,
    [a.afterPosition, a.clientId, a.types, a.first + 1],
  );
  return parseRows(EventRow, rows, 'the events page').map(toEvent);
}

/** Events by id (any order), sequenced or not. */
export async function findEvents(db: Queryable, ids: readonly string[]): Promise<StoredEvent[]> {
  const { rows } = await db.query(
    `SELECT ${COLUMNS} FROM events e LEFT JOIN event_positions p ON p.n = e.n WHERE e.id = ANY ($1::text[])`,
    [ids],
  );
  return parseRows(EventRow, rows, 'the events').map(toEvent);
}

/** Retention: one batch of sequenced events older than `days` (`prune_events()`). */
export async function pruneEvents(db: Db, days: number, limit: number): Promise<number> {
  const { rows } = await db.run('SELECT prune_events(p_days => $1, p_limit => $2) AS n', [days, limit]);
  return parseRow(z.object({ n: z.number() }), rows[0], 'prune_events()').n;
}
