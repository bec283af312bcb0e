// The pure rules of placing an order: input validation and the request fingerprint. Nothing here touches the database.
import { sha256Hex } from '../common/hash.js';
import { refuse, type DomainError } from './errors.js';

export type LineInput = { sku: string; quantity: number };
export type Limits = { maxLines: number; maxLineQuantity: number };

export const MAX_KEY_LENGTH = 255;
export const MAX_CUSTOMER_ID_LENGTH = 255;

/** Every reason a placeOrder input is refused before it reaches the database (pure; nothing is written). */
export function validatePlaceOrder(
  input: { idempotencyKey: string; customerId: string; lines: LineInput[] },
  limits: Limits,
): DomainError[] {
  const errors: DomainError[] = [];
  const err = (path: string[], message: string, sku?: string) =>
    errors.push(refuse('INVALID_INPUT', message, path, sku || null));
  if (input.idempotencyKey.length === 0 || input.idempotencyKey.length > MAX_KEY_LENGTH)
    err(['idempotencyKey'], `idempotencyKey must be 1 to ${MAX_KEY_LENGTH} characters`);
  if (input.customerId.trim().length === 0 || input.customerId.length > MAX_CUSTOMER_ID_LENGTH)
    err(['customerId'], `customerId must be 1 to ${MAX_CUSTOMER_ID_LENGTH} characters`);
  if (input.lines.length === 0) err(['lines'], 'an order needs at least one line');
  if (input.lines.length > limits.maxLines) err(['lines'], `an order may have at most ${limits.maxLines} lines`);
  // PostgreSQL text cannot hold NUL: refuse it here as bad input rather than fail in the database as a fault.
  if (input.idempotencyKey.includes('\u0000'))
    err(['idempotencyKey'], 'idempotencyKey must not contain NUL characters');
  if (input.customerId.includes('\u0000')) err(['customerId'], 'customerId must not contain NUL characters');
  const seen = new Set<string>();
  input.lines.forEach((line, i) => {
    if (line.sku.length === 0 || line.sku.length > 64 || line.sku.includes('\u0000'))
      // biome-ignore lint/suspicious/noControlCharactersInRegex: a NUL is what this strips (PostgreSQL refuses it in text)
      err(['lines', String(i), 'sku'], 'sku must be 1 to 64 characters', line.sku.replace(/\u0000/g, ''));
    if (!Number.isInteger(line.quantity) || line.quantity < 1 || line.quantity > limits.maxLineQuantity)
      err(['lines', String(i), 'quantity'], `quantity must be between 1 and ${limits.maxLineQuantity}`, line.sku);
    if (seen.has(line.sku)) err(['lines', String(i), 'sku'], `${line.sku} appears on more than one line`, line.sku);
    seen.add(line.sku);
  });
  return errors;
}

export type PaymentInput = { provider: string; token: string };
export const MAX_TOKEN_LENGTH = 255;

/** Why a payment input is refused before anything is written; `provider` is the configured processor's name, if any. */
export function validatePayment(payment: PaymentInput, provider: string | null): DomainError[] {
  const errors: DomainError[] = [];
  if (provider === null || payment.provider !== provider)
    errors.push(
      refuse(
        'INVALID_INPUT',
        provider ? `payment provider must be "${provider}"` : 'payments are not configured on this server',
        ['payment', 'provider'],
      ),
    );
  // I15: the token is stored with the payment attempt after the hold commits; PostgreSQL text cannot hold NUL, so a
  // token with one is refused here, before the claim, rather than by the database after it
  if (payment.token.length === 0 || payment.token.length > MAX_TOKEN_LENGTH || payment.token.includes('\u0000'))
    errors.push(
      refuse('INVALID_INPUT', `token must be 1 to ${MAX_TOKEN_LENGTH} characters, without NUL`, ['payment', 'token']),
    );
  return errors;
}

/**
 * I5: the request fingerprint. Canonical form: customer plus lines sorted by SKU, so the same cart in another line
 * order is the same request, and any other difference is a different one.
 */
export async function requestFingerprint(input: {
  customerId: string;
  lines: LineInput[];
  extra?: unknown;
}): Promise<string> {
  const lines = [...input.lines]
    .sort((a, b) => (a.sku < b.sku ? -1 : a.sku > b.sku ? 1 : 0))
    .map((l) => [l.sku, l.quantity]);
  return sha256Hex(JSON.stringify({ c: input.customerId, l: lines, x: input.extra ?? null }));
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
export const isUuid = (s: string) => UUID.test(s);
