// Every SQL statement the shop's console reads (docs/console.md): stock with held / awaiting / sold split by the
// reservations' state, the open holds and payments, the marketplace listings' health, and its one write, a push retry.
import { z } from 'zod';
import type { Queryable } from './pool.js';
import { parseRow, parseRows } from './rows.js';

/** One SKU's units: `held` and `awaitingPayment` split inventory.reserved by the reservations' state. */
export type StockLevel = {
  sku: string;
  name: string;
  isBundle: boolean;
  available: number;
  held: number;
  awaitingPayment: number;
  sold: number;
  purchaseLimit: number | null;
  version: number;
  components: { sku: string; quantity: number }[];
};

const StockRow = z.object({
  sku: z.string(),
  name: z.string(),
  is_bundle: z.boolean(),
  available: z.number(),
  held: z.number(),
  awaiting: z.number(),
  sold: z.number(),
  purchase_limit: z.number().nullable(),
  version: z.number(),
  components: z.array(z.object({ sku: z.string(), quantity: z.number() })),
});

function toStockLevel(r: z.infer<typeof StockRow>): StockLevel {
  return {
    sku: r.sku,
    name: r.name,
    isBundle: r.is_bundle,
    available: r.available,
    held: r.held,
    awaitingPayment: r.awaiting,
    sold: r.sold,
    purchaseLimit: r.purchase_limit,
    version: r.version,
    components: r.components,
  };
}

/** Up to `limit` SKUs in SKU order (a bundle's available is its components' minimum, as the API shows it). */
export async function stockLevels(db: Queryable, limit: number, skus?: string[] | null): Promise<StockLevel[]> {
  const { rows } = await db.query(
    `SELECT p.sku, p.name, p.is_bundle, i.purchase_limit,  -- a bucketed SKU's figures are its buckets' sums
            i.sold + CASE WHEN i.buckets > 1 THEN (SELECT coalesce(sum(b.sold), 0) FROM inventory_buckets b WHERE b.sku = i.sku)
                          ELSE 0 END::int AS sold,
            CASE WHEN p.is_bundle THEN (SELECT a.available FROM bundle_available(p_bundle => p.sku) a)
                 ELSE sku_available(p_sku => i.sku, p_available => i.available, p_buckets => i.buckets) END AS available,
            CASE WHEN p.is_bundle THEN (SELECT a.version FROM bundle_available(p_bundle => p.sku) a)
                 ELSE sku_version(p_sku => i.sku, p_version => i.version, p_buckets => i.buckets) END::float8 AS version,
            COALESCE(r.held, 0)::int AS held, COALESCE(r.awaiting, 0)::int AS awaiting,
            COALESCE((SELECT jsonb_agg(jsonb_build_object('sku', b.component_sku, 'quantity', b.quantity) ORDER BY b.component_sku)
                        FROM bundle_components b WHERE b.bundle_sku = p.sku), '[]'::jsonb) AS components
       FROM products p JOIN inventory i ON i.sku = p.sku
       LEFT JOIN LATERAL (
         SELECT sum(x.quantity) FILTER (WHERE x.state = 'HELD') AS held,
                sum(x.quantity) FILTER (WHERE x.state = 'AWAITING_PAYMENT') AS awaiting
           FROM reservations x WHERE x.sku = p.sku AND x.state IN ('HELD', 'AWAITING_PAYMENT')) r ON true
      WHERE $2::text[] IS NULL OR p.sku = ANY ($2::text[])
      ORDER BY p.sku LIMIT $1`,
    [limit, skus ?? null],
  );
  return parseRows(StockRow, rows, 'stockLevels()').map(toStockLevel);
}

/** An order whose units are held (RESERVED) or wait on the processor (AWAITING_PAYMENT). */
export type OpenOrder = {
  orderId: string;
  status: 'RESERVED' | 'AWAITING_PAYMENT';
  customerId: string;
  lines: { sku: string; quantity: number }[];
  createdAt: Date;
  expiresAt: Date;
  paymentState: string | null;
  paymentRequestedAt: Date | null;
  paymentDeadlineAt: Date | null;
  nextCheckAt: Date | null;
  checks: number;
  nextActionType: string | null;
};

const OpenOrderRow = z.object({
  id: z.string(),
  status: z.enum(['RESERVED', 'AWAITING_PAYMENT']),
  customer_id: z.string(),
  lines: z.array(z.object({ sku: z.string(), quantity: z.number() })),
  created_at: z.date(),
  expires_at: z.date(),
  payment_state: z.string().nullable(),
  requested_at: z.date().nullable(),
  deadline_at: z.date().nullable(),
  next_check_at: z.date().nullable(),
  checks: z.number().nullable(),
  next_action_type: z.string().nullable(),
});

function toOpenOrder(r: z.infer<typeof OpenOrderRow>): OpenOrder {
  return {
    orderId: r.id,
    status: r.status,
    customerId: r.customer_id,
    lines: r.lines,
    createdAt: r.created_at,
    expiresAt: r.expires_at,
    paymentState: r.payment_state,
    paymentRequestedAt: r.requested_at,
    paymentDeadlineAt: r.deadline_at,
    nextCheckAt: r.next_check_at,
    checks: r.checks ?? 0,
    nextActionType: r.next_action_type,
  };
}

/** Orders of `status`, the soonest to end first (holds by expiry, payments by their deadline); at most `limit`. */
export async function openOrders(
  db: Queryable,
  status: 'RESERVED' | 'AWAITING_PAYMENT',
  limit: number,
): Promise<OpenOrder[]> {
  const { rows } = await db.query(
    `SELECT o.id::text AS id, o.status, o.customer_id, o.created_at,
            (SELECT min(r.expires_at) FROM reservations r WHERE r.order_id = o.id) AS expires_at,
            (SELECT jsonb_agg(jsonb_build_object('sku', l.sku, 'quantity', l.quantity) ORDER BY l.sku)
               FROM order_lines l WHERE l.order_id = o.id) AS lines,
            p.state AS payment_state, p.requested_at, p.deadline_at, p.next_check_at, p.checks,
            p.next_action->>'type' AS next_action_type
       FROM orders o
       LEFT JOIN LATERAL (SELECT * FROM payments y WHERE y.order_id = o.id ORDER BY y.attempt DESC LIMIT 1) p ON true
      WHERE o.status = $1
      ORDER BY COALESCE(p.deadline_at, (SELECT min(r.expires_at) FROM reservations r WHERE r.order_id = o.id)), o.id
      LIMIT $2`,
    [status, limit],
  );
  return parseRows(OpenOrderRow, rows, 'openOrders()').map(toOpenOrder);
}

/** A channel's listing of a SKU with what the console shows of its health. */
export type ListingHealth = {
  channelId: string;
  channelName: string;
  sku: string;
  listed: number | null;
  shouldList: number;
  pending: boolean;
  desiredAt: Date;
  pushedAt: Date | null;
  attempts: number;
  nextAttemptAt: Date;
  lastError: string | null;
};

const ListingRow = z.object({
  channel_id: z.string(),
  channel_name: z.string(),
  sku: z.string(),
  pushed_quantity: z.number().nullable(),
  desired_quantity: z.number(),
  pending: z.boolean(),
  desired_at: z.date(),
  pushed_at: z.date().nullable(),
  attempts: z.number(),
  next_attempt_at: z.date(),
  last_error: z.string().nullable(),
});

function toListingHealth(r: z.infer<typeof ListingRow>): ListingHealth {
  return {
    channelId: r.channel_id,
    channelName: r.channel_name,
    sku: r.sku,
    listed: r.pushed_quantity,
    shouldList: r.desired_quantity,
    pending: r.pending,
    desiredAt: r.desired_at,
    pushedAt: r.pushed_at,
    attempts: r.attempts,
    nextAttemptAt: r.next_attempt_at,
    lastError: r.last_error,
  };
}

const LISTING_COLUMNS = `l.channel_id, c.name AS channel_name, l.sku, l.pushed_quantity, l.desired_quantity,
  l.desired_version > l.pushed_version AS pending, l.desired_at, l.pushed_at, l.attempts, l.next_attempt_at, l.last_error`;

/** Every listing, pending and failing ones first; at most `limit`. */
export async function listingHealth(db: Queryable, limit: number): Promise<ListingHealth[]> {
  const { rows } = await db.query(
    `SELECT ${LISTING_COLUMNS} FROM channel_listings l JOIN channels c ON c.id = l.channel_id
      ORDER BY (l.desired_version > l.pushed_version) DESC, (l.last_error IS NOT NULL) DESC, l.channel_id, l.sku
      LIMIT $1`,
    [limit],
  );
  return parseRows(ListingRow, rows, 'listingHealth()').map(toListingHealth);
}

export async function listingOf(db: Queryable, channelId: string, sku: string): Promise<ListingHealth | null> {
  const { rows } = await db.query(
    `SELECT ${LISTING_COLUMNS} FROM channel_listings l JOIN channels c ON c.id = l.channel_id
      WHERE l.channel_id = $1 AND l.sku = $2`,
    [channelId, sku],
  );
  return rows[0] ? toListingHealth(parseRow(ListingRow, rows[0], 'listingOf()')) : null;
}

/** An oversell incident and where its cancellation at the marketplace is. */
export type IncidentView = {
  channelId: string;
  externalOrderId: string;
  sku: string;
  cancelState: 'PENDING' | 'DONE';
  cancelAttempts: number;
  lastError: string | null;
  createdAt: Date;
  cancelledAt: Date | null;
};

const IncidentRow = z.object({
  channel_id: z.string(),
  external_order_id: z.string(),
  sku: z.string(),
  cancel_state: z.enum(['PENDING', 'DONE']),
  cancel_attempts: z.number(),
  last_error: z.string().nullable(),
  created_at: z.date(),
  cancelled_at: z.date().nullable(),
});

function toIncident(r: z.infer<typeof IncidentRow>): IncidentView {
  return {
    channelId: r.channel_id,
    externalOrderId: r.external_order_id,
    sku: r.sku,
    cancelState: r.cancel_state,
    cancelAttempts: r.cancel_attempts,
    lastError: r.last_error,
    createdAt: r.created_at,
    cancelledAt: r.cancelled_at,
  };
}

/** The newest `limit` oversell incidents of every channel. */
export async function incidents(db: Queryable, limit: number): Promise<IncidentView[]> {
  const { rows } = await db.query(
    `SELECT channel_id, external_order_id, sku, cancel_state, cancel_attempts, last_error, created_at, cancelled_at
       FROM channel_incidents ORDER BY created_at DESC, id DESC LIMIT $1`,
    [limit],
  );
  return parseRows(IncidentRow, rows, 'incidents()').map(toIncident);
}

const RetryAnswer = z.object({ kind: z.enum(['retried', 'up_to_date', 'not_found']) });

/** Brings a pending listing's next push to now (db/functions/130_console.sql). */
export async function retryChannelPush(
  db: Queryable,
  channelId: string,
  sku: string,
): Promise<z.infer<typeof RetryAnswer>['kind']> {
  const { rows } = await db.query(`SELECT retry_channel_push(p_channel_id => $1, p_sku => $2) AS r`, [channelId, sku]);
  return parseRow(RetryAnswer, rows[0]?.r, 'retry_channel_push()').kind;
}
