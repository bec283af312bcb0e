// Every SQL statement about orders and their holds: placing (one order, or a coalesced batch for one SKU), releasing,
// expiring, reading. Each answer is parsed at this boundary (db/rows.ts) into an OrderRecord (db/order-document.ts).
import { z } from 'zod';
import type { Db } from './pool.js';
import { parseRow, parseRows, UnexpectedRowError } from './rows.js';
import { Order, type OrderDocument, Rejection, toOrder, type OrderRecord } from './order-document.js';

export { toOrder, OrderDocument, ORDER_STATUSES, RESERVATION_STATES } from './order-document.js';
export type { OrderRecord, OrderStatus, Rejection, ReservationState } from './order-document.js';

/** What place_order() answers (db/functions/020_place-order.sql); `quiet`: refused at a glance, no outbox row written. */
const PlaceOrderAnswer = z.discriminatedUnion('kind', [
  z.object({ kind: z.enum(['placed', 'rejected', 'replayed']), order: Order, quiet: z.boolean().optional() }),
  z.object({ kind: z.literal('in_progress'), orderId: z.string(), order: Order.nullable() }),
  z.object({ kind: z.literal('reused'), orderId: z.string() }),
  z.object({ kind: z.literal('unknown_sku'), sku: z.string() }),
  z.object({ kind: z.literal('mixed_currency') }),
  z.object({ kind: z.literal('total_too_large') }),
]);
export type PlaceOrderRow = z.infer<typeof PlaceOrderAnswer>;

/**
 * What place_orders() answers per request: one of place_order()'s answers, or one in short (the order's id, price and
 * time, and the hold's expiry or the rejection), whose order this store completes from the request.
 */
const ShortAnswer = { id: z.string(), unitAmount: z.number(), currency: z.string(), at: z.string() };
const BatchAnswer = z.discriminatedUnion('kind', [
  ...PlaceOrderAnswer.options,
  z.object({ kind: z.literal('refused'), ...ShortAnswer, rejection: Rejection }),
  z.object({ kind: z.literal('plain'), ...ShortAnswer, expiresAt: z.string(), rejection: Rejection.optional() }),
]);
const BatchAnswers = z.array(BatchAnswer);
type ShortRow = Extract<z.infer<typeof BatchAnswer>, { kind: 'refused' | 'plain' }>;

export type PlaceOrderArgs = {
  clientId: string;
  customerId: string;
  key: string;
  requestHash: string;
  lines: { sku: string; quantity: number }[];
  holdTtlSeconds: number;
  retentionHours: number;
  /** a payment follows: the key row stays PROCESSING until the payment step finishes it */
  payment?: boolean;
  /** a PROCESSING key older than this is finished and replayed (its request died before the payment step) */
  recoverySeconds?: number | null;
  /** whom the hold counts against (orders/buyer.ts) and how many active holds a buyer may have; 0 or absent: no limit (I14) */
  buyer?: string;
  maxActiveHolds?: number;
  /** whom the purchase counter (I12) counts when it is not `customerId` (a public key's buyer by address); null: the customer */
  countedCustomer?: string | null;
  /** the SHA-256 of the order token this call hands out, written with a new order (never by a replay) */
  tokenHash?: string | null;
};

/** One request of a coalesced batch: PlaceOrderArgs without what the whole batch shares. */
export type BatchedOrderArgs = Omit<PlaceOrderArgs, 'holdTtlSeconds' | 'retentionHours' | 'maxActiveHolds'>;

/**
 * placeOrder's whole transaction as one statement (`place_order()`): key row, claims in SKU order by conditional
 * UPDATE (I3), order + lines + holds, stored response. One round trip; retried whole on 40001/40P01.
 */
export async function placeOrder(db: Db, a: PlaceOrderArgs): Promise<PlaceOrderRow> {
  const { rows } = await db.run(
    `SELECT place_order(p_client_id => $1, p_customer_id => $2, p_key => $3, p_request_hash => $4, p_lines => $5::jsonb,
                        p_hold_ttl_seconds => $6, p_retention_hours => $7, p_payment => $8, p_recovery_seconds => $9,
                        p_buyer => $10, p_max_holds => $11, p_token_hash => $12, p_counted_customer => $13) AS r`,
    [
      a.clientId,
      a.customerId,
      a.key,
      a.requestHash,
      JSON.stringify(a.lines),
      a.holdTtlSeconds,
      a.retentionHours,
      a.payment ?? false,
      a.recoverySeconds ?? null,
      a.buyer ?? null,
      a.maxActiveHolds ?? 0,
      a.tokenHash ?? null,
      a.countedCustomer ?? null,
    ],
  );
  return parseRow(PlaceOrderAnswer, rows[0]?.r, 'place_order()');
}

/**
 * Several single-line orders for ONE SKU in one transaction (`place_orders()`): each is place_order as above, but
 * they share one commit. Answers come back in request order.
 */
export async function placeOrders(
  db: Db,
  requests: BatchedOrderArgs[],
  holdTtlSeconds: number,
  retentionHours: number,
  maxActiveHolds = 0,
): Promise<PlaceOrderRow[]> {
  const payload = requests.map((a) => ({
    clientId: a.clientId,
    customerId: a.customerId,
    key: a.key,
    hash: a.requestHash,
    lines: a.lines,
    buyer: a.buyer ?? null,
    tokenHash: a.tokenHash ?? null,
    countedCustomer: a.countedCustomer ?? null,
  }));
  const { rows } = await db.run(
    `SELECT place_orders(p_requests => $1::jsonb, p_hold_ttl_seconds => $2, p_retention_hours => $3, p_max_holds => $4) AS r`,
    [JSON.stringify(payload), holdTtlSeconds, retentionHours, maxActiveHolds],
  );
  return placeOrdersAnswers(requests, rows[0]?.r);
}

type ShortRequest = { customerId: string; lines: { sku: string; quantity: number }[] };

/**
 * place_orders' answers as PlaceOrderRows, in request order. A refusal at a glance (`refused`) and a plain sale
 * (`plain`) come back in short; their orders are the documents order_json() reads back for them, completed from the
 * request (customer, SKU, quantity). Exported for the SQL-level tests.
 */
export function placeOrdersAnswers(requests: ShortRequest[], answers: unknown): PlaceOrderRow[] {
  const parsed = parseRow(BatchAnswers, answers, 'place_orders()');
  if (parsed.length !== requests.length)
    throw new UnexpectedRowError(`place_orders() answered ${parsed.length} answers to ${requests.length} requests`);
  const dates = new Map<string, Date>(); // the batch's timestamps (its transaction's, its holds' expiry), parsed once
  const dateOf = (text: string) => dates.get(text) ?? dates.set(text, new Date(text)).get(text)!;
  return parsed.map((r, i) => {
    if (r.kind !== 'refused' && r.kind !== 'plain') return r;
    const order = toOrder(shortDocument(requests[i]!, r), dateOf);
    return r.kind === 'refused'
      ? { kind: 'rejected', quiet: true, order }
      : { kind: r.rejection ? 'rejected' : 'placed', order };
  });
}

/** The document order_json() reads back for a short answer: RESERVED, held until `expiresAt`, unless it was refused. */
function shortDocument(req: ShortRequest, r: ShortRow): OrderDocument {
  const { sku, quantity } = req.lines[0]!;
  const rejection = r.rejection ?? null;
  return {
    id: r.id,
    status: rejection ? 'REJECTED' : 'RESERVED',
    customerId: req.customerId,
    lines: [{ sku, quantity, unitAmount: r.unitAmount }],
    totalAmount: r.unitAmount * quantity,
    currency: r.currency,
    reservation: rejection || r.kind === 'refused' ? null : { state: 'HELD', expiresAt: r.expiresAt },
    rejection,
    createdAt: r.at,
    updatedAt: r.at,
    channel: null,
  };
}

const ReleaseAnswer = z.discriminatedUnion('kind', [
  z.object({ kind: z.enum(['released', 'noop', 'already_final', 'payment_in_flight']), order: Order }),
  z.object({ kind: z.literal('not_found') }),
]);
export type ReleaseRow = z.infer<typeof ReleaseAnswer>;

/** How many stock rows a SKU's units are spread over (db/migrations/0100_stock-buckets.sql); 1 for an unknown SKU. */
export async function stockBucketsOf(db: Db, sku: string): Promise<number> {
  const { rows } = await db.query('SELECT buckets FROM inventory WHERE sku = $1', [sku]);
  return rows[0] ? parseRow(z.object({ buckets: z.number() }), rows[0], 'stockBucketsOf()').buckets : 1;
}

/** releaseReservation as one statement: guarded on the order's status (I6), units back in SKU order. */
export async function releaseOrder(
  db: Db,
  clientId: string | null,
  orderId: string,
  reason: string | null,
): Promise<ReleaseRow> {
  // clientId null: an admin's release of any client's order (db/functions/130_console.sql)
  const { rows } =
    clientId === null
      ? await db.run('SELECT release_order_of_any_client(p_order_id => $1::uuid, p_reason => $2) AS r', [
          orderId,
          reason,
        ])
      : await db.run('SELECT release_order(p_client_id => $1, p_order_id => $2::uuid, p_reason => $3) AS r', [
          clientId,
          orderId,
          reason,
        ]);
  return parseRow(ReleaseAnswer, rows[0]?.r, 'release_order()');
}

const OrderRow = z.object({ j: Order });

/**
 * One order, only for the client that created it; with `tokenHash`, only if it is that order's token's hash (a
 * `public` key's reads).
 */
export async function findOrder(
  db: Db,
  clientId: string,
  orderId: string,
  tokenHash?: string,
): Promise<OrderRecord | null> {
  const { rows } = await db.query(
    'SELECT order_json(p_order_id => id) AS j FROM orders WHERE id = $1::uuid AND client_id = $2 AND ($3::text IS NULL OR token_hash = $3)',
    [orderId, clientId, tokenHash ?? null],
  );
  return rows[0] ? parseRow(OrderRow, rows[0], 'order_json()').j : null;
}

const ExpiredRow = z.object({ order_id: z.string(), units: z.number() });
const toExpired = (r: z.infer<typeof ExpiredRow>) => ({ orderId: r.order_id, units: r.units });

/** Expires one batch of holds past `expires_at` (SKIP LOCKED; see expire_due_holds). Returns what it expired. */
export async function expireDueHolds(db: Db, limit: number): Promise<{ orderId: string; units: number }[]> {
  const { rows } = await db.run('SELECT order_id, units FROM expire_due_holds(p_limit => $1)', [limit]);
  return parseRows(ExpiredRow, rows, 'expire_due_holds()').map(toExpired);
}

/** Deletes one batch of finished idempotency keys past their retention; orders stay. */
export async function deleteExpiredKeys(db: Db, limit: number): Promise<number> {
  // Finished keys past retention: DONE ones, and PROCESSING ones whose order is final (a payment left the key
  // PROCESSING and the process died; the order was settled since by the reconciler, a webhook or the sweeper) or that
  // never got an order. A PROCESSING key of an order still RESERVED or AWAITING_PAYMENT is kept: its recovery needs it.
  const { rowCount } = await db.run(
    `DELETE FROM idempotency_keys WHERE (client_id, customer_id, key) IN (
       SELECT k.client_id, k.customer_id, k.key FROM idempotency_keys k
         LEFT JOIN orders o ON o.id = k.order_id
        WHERE k.expires_at < now()
          AND (k.state = 'DONE' OR o.id IS NULL OR o.status IN ('CONFIRMED', 'REJECTED', 'CANCELLED', 'EXPIRED'))
        LIMIT $1 FOR UPDATE OF k SKIP LOCKED)`,
    [limit],
  );
  return rowCount ?? 0;
}

/** One order whatever its client (admin operations). */
export async function findAnyOrder(db: Db, orderId: string): Promise<OrderRecord | null> {
  const { rows } = await db.query('SELECT order_json(p_order_id => id) AS j FROM orders WHERE id = $1::uuid', [
    orderId,
  ]);
  return rows[0] ? parseRow(OrderRow, rows[0], 'order_json()').j : null;
}

const PagedOrderRow = z.object({ j: Order, c: z.string(), id: z.string() });

/**
 * One page of orders, newest first, keyset on (created_at, id) after the cursor `after` (exclusive). `clientId` null:
 * every client's (admin). Uses orders_client_customer_idx / orders_client_idx.
 */
export async function pageOrders(
  db: Db,
  f: {
    clientId: string | null;
    customerId: string | null;
    status: string | null;
    after: { createdAt: string; id: string } | null;
    limit: number;
  },
): Promise<(OrderRecord & { cursorKey: { createdAt: string; id: string } })[]> {
  const { rows } = await db.query(
    `SELECT order_json(p_order_id => o.id) AS j, to_char(o.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS c, o.id
       FROM orders o
      WHERE ($1::text IS NULL OR o.client_id = $1) AND ($2::text IS NULL OR o.customer_id = $2) AND ($3::text IS NULL OR o.status = $3)
        AND ($4::timestamptz IS NULL OR (o.created_at, o.id) < ($4::timestamptz, $5::uuid))
      ORDER BY o.created_at DESC, o.id DESC
      LIMIT $6`,
    [f.clientId, f.customerId, f.status, f.after?.createdAt ?? null, f.after?.id ?? null, f.limit],
  );
  return parseRows(PagedOrderRow, rows, 'order_json()').map((r) => ({
    ...r.j,
    cursorKey: { createdAt: r.c, id: r.id },
  }));
}
