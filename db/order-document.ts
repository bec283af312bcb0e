// The order as every path answers it: the document SQL builds in one place (`order_document()`, read back by
// `order_json()`, db/functions/010_events.sql), its schema, and the one function that turns it into the domain's
// OrderRecord. Answers that come back in short (place_orders) are completed into this same document first
// (db/orders-store.ts), so there is one model of an order in TypeScript.
import { z } from 'zod';

export const ORDER_STATUSES = [
  'PROCESSING',
  'RESERVED',
  'AWAITING_PAYMENT',
  'CONFIRMED',
  'REJECTED',
  'CANCELLED',
  'EXPIRED',
] as const;
export const RESERVATION_STATES = ['HELD', 'AWAITING_PAYMENT', 'SOLD', 'RELEASED', 'EXPIRED'] as const;
export type OrderStatus = (typeof ORDER_STATUSES)[number];
export type ReservationState = (typeof RESERVATION_STATES)[number];

/** Why an order was refused, as the database wrote it (`orders.rejection`); the domain checks the code (rejectionOf). */
export const Rejection = z.object({ code: z.string(), sku: z.string().nullish(), message: z.string() });
export type Rejection = z.infer<typeof Rejection>;

/** `order_document()`'s document, field for field; timestamps are the JSON text PostgreSQL wrote. */
export const OrderDocument = z.object({
  id: z.string(),
  status: z.enum(ORDER_STATUSES),
  customerId: z.string(),
  lines: z.array(z.object({ sku: z.string(), quantity: z.number(), unitAmount: z.number() })),
  totalAmount: z.number(),
  currency: z.string(),
  reservation: z.object({ state: z.enum(RESERVATION_STATES), expiresAt: z.string() }).nullable(),
  rejection: Rejection.nullable(),
  createdAt: z.string(),
  updatedAt: z.string(),
  channel: z.string().nullish(),
});
export type OrderDocument = z.infer<typeof OrderDocument>;

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

const parseDate = (text: string) => new Date(text);

/**
 * The OrderRecord of an order document. `dateOf` may share Date objects between the orders of one batch (their
 * timestamps are the batch transaction's).
 * @example toOrder(parseRow(OrderDocument, row.j, 'order_json()'))
 */
export function toOrder(d: OrderDocument, dateOf: (text: string) => Date = parseDate): OrderRecord {
  return {
    id: d.id,
    status: d.status,
    customerId: d.customerId,
    lines: d.lines,
    totalAmount: d.totalAmount,
    currency: d.currency.trim(),
    reservation: d.reservation ? { state: d.reservation.state, expiresAt: dateOf(d.reservation.expiresAt) } : null,
    rejection: d.rejection ?? null,
    createdAt: dateOf(d.createdAt),
    updatedAt: dateOf(d.updatedAt),
    channel: d.channel ?? null,
  };
}

/** An order document read straight into an OrderRecord (the shape inside a function's answer or a row). */
export const Order = OrderDocument.transform((d) => toOrder(d));
