import type { Db } from './pool.js';

export type OrderStatus = 'PROCESSING' | 'RESERVED' | 'AWAITING_PAYMENT' | 'CONFIRMED' | 'REJECTED' | 'CANCELLED' | 'EXPIRED';
export type ReservationState = 'HELD' | 'AWAITING_PAYMENT' | 'SOLD' | 'RELEASED' | 'EXPIRED';
export type Rejection = { code: string; sku?: string | null; message: string };
export type OrderRecord = {
  id: string;
  status: OrderStatus;
  customerId: string;
  lines: { sku: string; quantity: number; unitAmount: number }[];
  totalAmount: number;
  currency: string;
  reservation: { state: ReservationState; expiresAt: Date } | null;
  rejection: Rejection | null;
  createdAt: Date;
  updatedAt: Date;
  /** the marketplace channel that sold it (docs/channels.md); null for storefront orders */
  channel?: string | null;
};

/** Maps the `order_json()` document (the one shape every order path returns) to an OrderRecord. */
export function toOrder(j: any): OrderRecord {
  return {
    id: j.id,
    status: j.status,
    customerId: j.customerId,
    lines: j.lines,
    totalAmount: j.totalAmount,
    currency: String(j.currency).trim(),
    reservation: j.reservation ? { state: j.reservation.state, expiresAt: new Date(j.reservation.expiresAt) } : null,
    rejection: j.rejection ?? null,
    createdAt: new Date(j.createdAt),
    updatedAt: new Date(j.updatedAt),
    channel: j.channel ?? null,
  };
}

export type PlaceOrderRow =
  /** `quiet`: refused at a glance, nothing written to the outbox (no relay to wake) */
  | { kind: 'placed' | 'rejected' | 'replayed'; order: OrderRecord; quiet?: boolean }
  | { kind: 'in_progress'; orderId: string; order: OrderRecord | null }
  | { kind: 'reused'; orderId: string }
  | { kind: 'unknown_sku'; sku: string }
  | { kind: 'mixed_currency' }
  | { kind: 'total_too_large' };

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

/**
 * placeOrder's whole transaction as one statement (`place_order()` in db/functions/020_place-order.sql): key row, claims in SKU order
 * by conditional UPDATE (I3), order + lines + holds, stored response. One round trip; retried whole on 40001/40P01.
 */
export async function placeOrder(db: Db, a: PlaceOrderArgs): Promise<PlaceOrderRow> {
  const { rows } = await db.run<{ r: any }>('SELECT place_order($1, $2, $3, $4, $5::jsonb, $6, $7, $8, $9, $10, $11, $12, $13) AS r', [
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
  ]);
  const r = rows[0]!.r;
  if (r.order) r.order = toOrder(r.order);
  return r as PlaceOrderRow;
}

/**
 * Several single-line orders for ONE SKU in one transaction (`place_orders()` in db/functions/020_place-order.sql): each is
 * place_order as above, but they share one commit. Answers come back in request order.
 */
export async function placeOrders(
  db: Db,
  requests: Omit<PlaceOrderArgs, 'holdTtlSeconds' | 'retentionHours' | 'maxActiveHolds'>[],
  holdTtlSeconds: number,
  retentionHours: number,
  maxActiveHolds = 0,
): Promise<PlaceOrderRow[]> {
  const payload = requests.map((a) => ({ clientId: a.clientId, customerId: a.customerId, key: a.key, hash: a.requestHash, lines: a.lines, buyer: a.buyer ?? null, tokenHash: a.tokenHash ?? null, countedCustomer: a.countedCustomer ?? null }));
  const { rows } = await db.run<{ r: any[] }>('SELECT place_orders($1::jsonb, $2, $3, $4) AS r', [
    JSON.stringify(payload),
    holdTtlSeconds,
    retentionHours,
    maxActiveHolds,
  ]);
  return placeOrdersAnswers(requests, rows[0]!.r);
}

/**
 * place_orders' answers as PlaceOrderRows, in request order. A refusal at a glance (`refused`) and a plain sale
 * (`plain`) come back in short, and their orders are built here from the short answer and the request (customer, SKU,
 * quantity): the documents order_json() reads back for them. Exported for the SQL-level tests.
 */
export function placeOrdersAnswers(requests: { customerId: string; lines: { sku: string; quantity: number }[] }[], answers: any[]): PlaceOrderRow[] {
  const dates = new Map<string, Date>(); // the batch's timestamps (its transaction's, its holds' expiry), parsed once
  const dateOf = (text: string) => dates.get(text) ?? dates.set(text, new Date(text)).get(text)!;
  return answers.map((r, i) => {
    if (r.kind === 'refused') return { kind: 'rejected', quiet: true, order: shortOrder(requests[i]!, r, dateOf) };
    if (r.kind === 'plain') return { kind: r.rejection ? 'rejected' : 'placed', order: shortOrder(requests[i]!, r, dateOf) };
    if (r.order) r.order = toOrder(r.order);
    return r as PlaceOrderRow;
  });
}

/** The order of a short answer: granted (RESERVED, held until `expiresAt`) unless it carries a rejection. */
function shortOrder(
  req: { customerId: string; lines: { sku: string; quantity: number }[] },
  r: { id: string; rejection?: OrderRecord['rejection']; unitAmount: number; currency: string; at: string; expiresAt?: string },
  dateOf: (text: string) => Date,
): OrderRecord {
  const { sku, quantity } = req.lines[0]!;
  const at = dateOf(r.at);
  return {
    id: r.id,
    status: r.rejection ? 'REJECTED' : 'RESERVED',
    customerId: req.customerId,
    lines: [{ sku, quantity, unitAmount: r.unitAmount }],
    totalAmount: r.unitAmount * quantity,
    currency: String(r.currency).trim(),
    reservation: r.rejection ? null : { state: 'HELD', expiresAt: dateOf(r.expiresAt!) },
    rejection: r.rejection ?? null,
    createdAt: at,
    updatedAt: at,
    channel: null,
  };
}

export type ReleaseRow =
  | { kind: 'released' | 'noop' | 'already_final' | 'payment_in_flight'; order: OrderRecord }
  | { kind: 'not_found' };

/** releaseReservation as one statement: guarded on the order's status (I6), units back in SKU order. */
export async function releaseOrder(db: Db, clientId: string, orderId: string, reason: string | null): Promise<ReleaseRow> {
  const { rows } = await db.run<{ r: any }>('SELECT release_order($1, $2::uuid, $3) AS r', [clientId, orderId, reason]);
  const r = rows[0]!.r;
  if (r.order) r.order = toOrder(r.order);
  return r as ReleaseRow;
}

/**
 * One order, only for the client that created it; with `tokenHash`, only if it is that order's token's hash (a
 * `public` key's reads).
 */
export async function findOrder(db: Db, clientId: string, orderId: string, tokenHash?: string): Promise<OrderRecord | null> {
  const { rows } = await db.query<{ j: any }>(
    'SELECT order_json(id) AS j FROM orders WHERE id = $1::uuid AND client_id = $2 AND ($3::text IS NULL OR token_hash = $3)',
    [orderId, clientId, tokenHash ?? null],
  );
  return rows[0] ? toOrder(rows[0].j) : null;
}

/** Expires one batch of holds past `expires_at` (SKIP LOCKED; see expire_due_holds). Returns what it expired. */
export async function expireDueHolds(db: Db, limit: number): Promise<{ orderId: string; units: number }[]> {
  const { rows } = await db.run<{ order_id: string; units: number }>(
    'SELECT order_id, units FROM expire_due_holds($1)',
    [limit],
  );
  return rows.map((r) => ({ orderId: r.order_id, units: r.units }));
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
  const { rows } = await db.query<{ j: any }>('SELECT order_json(id) AS j FROM orders WHERE id = $1::uuid', [orderId]);
  return rows[0] ? toOrder(rows[0].j) : null;
}

/**
 * One page of orders, newest first, keyset on (created_at, id) after the cursor `after` (exclusive). `clientId` null:
 * every client's (admin). Uses orders_client_customer_idx / orders_client_idx.
 */
export async function pageOrders(
  db: Db,
  f: { clientId: string | null; customerId: string | null; status: string | null; after: { createdAt: string; id: string } | null; limit: number },
): Promise<(OrderRecord & { cursorKey: { createdAt: string; id: string } })[]> {
  const { rows } = await db.query<{ j: any; c: string; id: string }>(
    `SELECT order_json(o.id) AS j, to_char(o.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS c, o.id
       FROM orders o
      WHERE ($1::text IS NULL OR o.client_id = $1) AND ($2::text IS NULL OR o.customer_id = $2) AND ($3::text IS NULL OR o.status = $3)
        AND ($4::timestamptz IS NULL OR (o.created_at, o.id) < ($4::timestamptz, $5::uuid))
      ORDER BY o.created_at DESC, o.id DESC
      LIMIT $6`,
    [f.clientId, f.customerId, f.status, f.after?.createdAt ?? null, f.after?.id ?? null, f.limit],
  );
  return rows.map((r) => ({ ...toOrder(r.j), cursorKey: { createdAt: r.c, id: r.id } }));
}
