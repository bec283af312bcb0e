// Webhook endpoints and their deliveries (docs/events.md): the admin's rows, and the worker's claim and record steps
// (db/functions/101_webhooks.sql). Secrets leave this file only for signing and in createWebhookEndpoint's answer.
import { z } from 'zod';
import type { Db, Queryable } from './pool.js';
import { parseRow, parseRows } from './rows.js';
import { EVENT_TYPES, type EventType } from './events-store.js';

export type WebhookEndpoint = {
  id: string;
  url: string;
  description: string | null;
  eventTypes: EventType[];
  enabled: boolean;
  disabledAt: Date | null;
  failingSince: Date | null;
  previousSecretUntil: Date | null;
  createdAt: Date;
  updatedAt: Date;
};
export type SigningSecrets = { secret: string; previousSecret: string | null };

const EndpointRow = z.object({
  id: z.string(),
  url: z.string(),
  description: z.string().nullable(),
  event_types: z.array(z.enum(EVENT_TYPES)),
  enabled: z.boolean(),
  disabled_at: z.date().nullable(),
  failing_since: z.date().nullable(),
  previous_secret_until: z.date().nullable(),
  created_at: z.date(),
  updated_at: z.date(),
});
const COLUMNS =
  'id, url, description, event_types, enabled, disabled_at, failing_since, previous_secret_until, created_at, updated_at';

function toEndpoint(r: z.infer<typeof EndpointRow>): WebhookEndpoint {
  return {
    id: r.id,
    url: r.url,
    description: r.description,
    eventTypes: r.event_types,
    enabled: r.enabled,
    disabledAt: r.disabled_at,
    failingSince: r.failing_since,
    previousSecretUntil: r.previous_secret_until,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
  };
}

export async function insertEndpoint(
  db: Db,
  e: { url: string; description: string | null; eventTypes: readonly EventType[]; secret: string },
): Promise<WebhookEndpoint> {
  const { rows } = await db.run(
    `INSERT INTO webhook_endpoints (url, description, event_types, secret) VALUES ($1, $2, $3, $4) RETURNING ${COLUMNS}`,
    [e.url, e.description, e.eventTypes, e.secret],
    { idempotent: false },
  );
  return toEndpoint(parseRow(EndpointRow, rows[0], 'the inserted endpoint'));
}

/** Absent fields stay; `enabled: true` also clears the failure clock. Null: no such endpoint. */
export async function updateEndpoint(
  db: Db,
  id: string,
  p: { url?: string; description?: string | null; eventTypes?: readonly EventType[]; enabled?: boolean },
): Promise<WebhookEndpoint | null> {
  const { rows } = await db.run(
    `UPDATE webhook_endpoints SET url = coalesce($2, url), description = CASE WHEN $3 THEN $4 ELSE description END,
            event_types = coalesce($5, event_types), enabled = coalesce($6, enabled),
            disabled_at = CASE WHEN $6 THEN NULL WHEN $6 = false THEN coalesce(disabled_at, now()) ELSE disabled_at END,
            failing_since = CASE WHEN $6 THEN NULL ELSE failing_since END, updated_at = now()
      WHERE id = $1 RETURNING ${COLUMNS}`,
    [id, p.url ?? null, p.description !== undefined, p.description ?? null, p.eventTypes ?? null, p.enabled ?? null],
  );
  return rows[0] ? toEndpoint(parseRow(EndpointRow, rows[0], 'the updated endpoint')) : null;
}

/** Deletes an endpoint and its deliveries; false: no such endpoint. */
export async function deleteEndpoint(db: Db, id: string): Promise<boolean> {
  const { rowCount } = await db.run('DELETE FROM webhook_endpoints WHERE id = $1', [id]);
  return (rowCount ?? 0) > 0;
}

/** A new secret; the current one keeps signing for `overlapSeconds` beside it. Null: no such endpoint. */
export async function rotateSecret(
  db: Db,
  id: string,
  secret: string,
  overlapSeconds: number,
): Promise<WebhookEndpoint | null> {
  const { rows } = await db.run(
    `UPDATE webhook_endpoints SET previous_secret = secret, secret = $2,
            previous_secret_until = now() + make_interval(secs => $3), updated_at = now()
      WHERE id = $1 RETURNING ${COLUMNS}`,
    [id, secret, overlapSeconds],
    { idempotent: false },
  );
  return rows[0] ? toEndpoint(parseRow(EndpointRow, rows[0], 'the rotated endpoint')) : null;
}

export async function listEndpoints(db: Queryable): Promise<WebhookEndpoint[]> {
  const { rows } = await db.query(`SELECT ${COLUMNS} FROM webhook_endpoints ORDER BY created_at, id`);
  return parseRows(EndpointRow, rows, 'the endpoints').map(toEndpoint);
}

export async function findEndpoint(db: Queryable, id: string): Promise<WebhookEndpoint | null> {
  const { rows } = await db.query(`SELECT ${COLUMNS} FROM webhook_endpoints WHERE id = $1`, [id]);
  return rows[0] ? toEndpoint(parseRow(EndpointRow, rows[0], 'the endpoint')) : null;
}

/** Whether any endpoint is enabled: only then does a delivery worker sequence events right after each commit. */
export async function anyEnabledEndpoint(db: Queryable): Promise<boolean> {
  const { rows } = await db.query('SELECT EXISTS (SELECT 1 FROM webhook_endpoints WHERE enabled) AS enabled');
  return parseRow(z.object({ enabled: z.boolean() }), rows[0], 'the enabled endpoints').enabled;
}

export const DELIVERY_STATUSES = ['PENDING', 'DELIVERED', 'FAILED'] as const;
export type Delivery = {
  id: number;
  eventId: string;
  attempt: number;
  status: (typeof DELIVERY_STATUSES)[number];
  httpStatus: number | null;
  durationMs: number | null;
  lastError: string | null;
  nextAttemptAt: Date | null;
  createdAt: Date;
  deliveredAt: Date | null;
};
const DeliveryRow = z.object({
  id: z.coerce.number(),
  event_id: z.string(),
  attempt: z.number(),
  status: z.enum(DELIVERY_STATUSES),
  http_status: z.number().nullable(),
  duration_ms: z.number().nullable(),
  last_error: z.string().nullable(),
  next_attempt_at: z.date(),
  created_at: z.date(),
  delivered_at: z.date().nullable(),
});
function toDelivery(r: z.infer<typeof DeliveryRow>): Delivery {
  return {
    id: r.id,
    eventId: r.event_id,
    attempt: r.attempt,
    status: r.status,
    httpStatus: r.http_status,
    durationMs: r.duration_ms,
    lastError: r.last_error,
    nextAttemptAt: r.status === 'PENDING' ? r.next_attempt_at : null,
    createdAt: r.created_at,
    deliveredAt: r.delivered_at,
  };
}

/** An endpoint's deliveries, newest first, `first + 1` of them, below delivery id `beforeId` when given. */
export async function pageDeliveries(
  db: Queryable,
  endpointId: string,
  first: number,
  beforeId: number | null,
): Promise<Delivery[]> {
  const { rows } = await db.query(
    `SELECT id, event_id, attempt, status, http_status, duration_ms, last_error, next_attempt_at, created_at, delivered_at
       FROM webhook_deliveries WHERE endpoint_id = $1 AND ($2::bigint IS NULL OR id < $2) ORDER BY id DESC LIMIT $3`,
    [endpointId, beforeId, first + 1],
  );
  return parseRows(DeliveryRow, rows, 'the deliveries').map(toDelivery);
}

/** A redelivery of one event: a new delivery of its own (it waits for no other). Null: no such endpoint or event. */
export async function insertRedelivery(db: Db, endpointId: string, eventId: string): Promise<Delivery | null> {
  const { rows } = await db.run(
    `INSERT INTO webhook_deliveries (endpoint_id, event_id, position, order_key)
     SELECT w.id, e.id, coalesce((SELECT p.position FROM event_positions p WHERE p.n = e.n), 0),
            'redelivery:' || gen_random_uuid()
       FROM webhook_endpoints w, events e WHERE w.id = $1 AND e.id = $2
     RETURNING id, event_id, attempt, status, http_status, duration_ms, last_error, next_attempt_at, created_at, delivered_at`,
    [endpointId, eventId],
    { idempotent: false },
  );
  return rows[0] ? toDelivery(parseRow(DeliveryRow, rows[0], 'the redelivery')) : null;
}

/** A claimed delivery with what sending it needs: the endpoint's URL and signing secrets, the event. */
export type ClaimedDelivery = {
  deliveryId: number;
  attempt: number;
  endpointId: string;
  url: string;
  secrets: string[];
  eventId: string;
  eventType: EventType;
  eventCreatedAt: Date;
  sequence: number;
  data: Record<string, unknown>;
};
const ClaimedRow = z.object({
  delivery_id: z.coerce.number(),
  attempt: z.number(),
  endpoint_id: z.string(),
  url: z.string(),
  secrets: z.array(z.string()),
  event_id: z.string(),
  type: z.enum(EVENT_TYPES),
  created_at: z.date(),
  sequence: z.coerce.number(),
  data: z.record(z.string(), z.unknown()),
});

/** Claims due deliveries (`claim_webhook_deliveries()`: FOR UPDATE SKIP LOCKED, leased), one short transaction. */
export async function claimDeliveries(
  db: Db,
  a: { limit: number; perEndpoint: number; leaseSeconds: number },
): Promise<ClaimedDelivery[]> {
  const { rows } = await db.run(
    `SELECT c.delivery_id, c.attempt, c.endpoint_id, w.url,
            array_remove(ARRAY[w.secret, CASE WHEN w.previous_secret_until > now() THEN w.previous_secret END], NULL) AS secrets,
            e.id AS event_id, e.type, e.created_at, e.sequence, e.data
       FROM claim_webhook_deliveries(p_limit => $1, p_per_endpoint => $2, p_lease_seconds => $3) c
       JOIN webhook_endpoints w ON w.id = c.endpoint_id JOIN events e ON e.id = c.event_id
      ORDER BY c.delivery_id`,
    [a.limit, a.perEndpoint, a.leaseSeconds],
    { idempotent: false },
  );
  return parseRows(ClaimedRow, rows, 'claim_webhook_deliveries()').map((r) => ({
    deliveryId: r.delivery_id,
    attempt: r.attempt,
    endpointId: r.endpoint_id,
    url: r.url,
    secrets: r.secrets,
    eventId: r.event_id,
    eventType: r.type,
    eventCreatedAt: r.created_at,
    sequence: r.sequence,
    data: r.data,
  }));
}

/** Records one attempt (`record_webhook_attempt()`); null: its lease was lost to another worker. */
export async function recordAttempt(
  db: Db,
  a: {
    deliveryId: number;
    attempt: number;
    ok: boolean;
    httpStatus: number | null;
    durationMs: number;
    error: string | null;
    retrySeconds: number | null;
    disableAfterHours: number;
  },
): Promise<string | null> {
  const { rows } = await db.run(
    `SELECT record_webhook_attempt(p_id => $1, p_attempt => $2, p_ok => $3, p_http_status => $4, p_duration_ms => $5,
            p_error => $6, p_retry_seconds => $7, p_disable_after_hours => $8) AS status`,
    [a.deliveryId, a.attempt, a.ok, a.httpStatus, a.durationMs, a.error, a.retrySeconds, a.disableAfterHours],
  );
  return parseRow(z.object({ status: z.string().nullable() }), rows[0], 'record_webhook_attempt()').status;
}
