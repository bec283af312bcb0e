// The domain's expected failures as one typed union: the GraphQL ErrorCode enum is derived from ERROR_CODES
// (schema/common.ts) and resolvers turn `path` into the API's `field` (resolvers/user-errors.ts). Only faults throw.

/** Every code a client may branch on (docs/api.md). Append only: clients keep switch statements over these. */
export const ERROR_CODES = [
  'SOLD_OUT',
  'INSUFFICIENT_STOCK',
  'UNKNOWN_SKU',
  'INVALID_INPUT',
  'IDEMPOTENCY_KEY_REUSED',
  'IN_PROGRESS',
  'PAYMENT_DECLINED',
  'RESERVATION_EXPIRED',
  'ALREADY_FINAL',
  'PAYMENT_IN_FLIGHT',
  'NOT_FOUND',
  'STALE',
  'VERSION_ALREADY_PUBLISHED',
  'PURCHASE_LIMIT',
  'HOLD_LIMIT',
  'CHANNEL_OVERSOLD',
  'DROP_NOT_ADMITTED',
  'DROP_CLOSED',
  'DROP_NOT_OPEN',
  'ALREADY_ENTERED',
  'ENTRY_LIMIT',
  'DROP_EXISTS',
  'AVAILABLE',
] as const;
export type ErrorCode = (typeof ERROR_CODES)[number];

/**
 * An expected failure. `path` names the input field at fault relative to the operation's input (e.g. ['lines', '0',
 * 'quantity']); `sku` the product concerned.
 */
export type DomainError = { code: ErrorCode; message: string; path?: string[]; sku?: string | null };

/** A domain answer: the value, or why not. */
export type Result<T> = { ok: true; value: T } | { ok: false; errors: DomainError[] };

const CODES = new Set<string>(ERROR_CODES);
export const isErrorCode = (s: unknown): s is ErrorCode => typeof s === 'string' && CODES.has(s);

/**
 * One expected failure.
 * @example refuse('NOT_FOUND', 'no such order', ['orderId'])
 */
export function refuse(code: ErrorCode, message: string, path?: string[], sku?: string | null): DomainError {
  return { code, message, ...(path ? { path } : {}), ...(sku != null ? { sku } : {}) };
}

/** A failed Result with one error. */
export const failed = <T>(code: ErrorCode, message: string, path?: string[], sku?: string | null): Result<T> => ({
  ok: false,
  errors: [refuse(code, message, path, sku)],
});

/**
 * The rejection an order carries (written by the database: SOLD_OUT, INSUFFICIENT_STOCK, PAYMENT_DECLINED...), parsed
 * at the boundary; a code this version does not know is a fault, not a silent cast.
 */
export function rejectionOf(order: {
  rejection: { code: string; message: string; sku?: string | null } | null;
}): DomainError | null {
  const r = order.rejection;
  if (!r) return null;
  if (!isErrorCode(r.code)) throw new Error(`order rejection with an unknown code: ${r.code}`);
  return refuse(r.code, r.message, undefined, r.sku ?? null);
}
