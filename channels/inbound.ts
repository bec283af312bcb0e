// Marketplace order webhooks as one normalized event: the signature verified on the raw body first (SANDBOX:
// lastunit's `x-lastunit-signature`; SHOPIFY: Shopify's `X-Shopify-Hmac-Sha256`), then the body read. Pure: no I/O.
// No node:crypto: the admin channel operations reach this file from the worker bundle too (common/hmac-sha256.ts).
import { hmacSha256, sameText, toBase64, toHex } from '../common/hmac-sha256.js';

export const SANDBOX_SIGNATURE_HEADER = 'x-lastunit-signature';

export class ChannelSignatureError extends Error {}
export class ChannelPayloadError extends Error {}

export type ChannelKind = 'SANDBOX' | 'SHOPIFY';
export type ChannelEvent = {
  eventId: string;
  type: 'order.created' | 'order.cancelled';
  externalOrderId: string;
  customer: string;
  lines: { sku: string; quantity: number }[];
};
/** A verified delivery lastunit has nothing to do with (another Shopify topic). */
export type IgnoredDelivery = { ignored: string };

const hmac = (secret: string, text: string, enc: 'hex' | 'base64') => (enc === 'hex' ? toHex : toBase64)(hmacSha256(secret, text));

/**
 * `t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<raw body>")>`, the scheme of lastunit's payment sandbox.
 * @example headers[SANDBOX_SIGNATURE_HEADER] = signSandbox(body, secret)
 */
export function signSandbox(body: string, secret: string, timestamp = Math.floor(Date.now() / 1000)): string {
  return `t=${timestamp},v1=${hmac(secret, `${timestamp}.${body}`, 'hex')}`;
}

/** Shopify's `X-Shopify-Hmac-Sha256`: base64 HMAC-SHA256 of the raw body with the app's secret. */
export function signShopify(body: string, secret: string): string {
  return hmac(secret, body, 'base64');
}

function verifySandbox(body: string, header: string | null, secret: string, toleranceSeconds: number, now: number): void {
  if (!header) throw new ChannelSignatureError('missing x-lastunit-signature header');
  const parts = header.split(',').map((p) => p.trim().split('='));
  const t = parts.find(([k]) => k === 't')?.[1];
  const sigs = parts.filter(([k]) => k === 'v1').map(([, v]) => v ?? '');
  if (!t || !/^\d+$/.test(t) || sigs.length === 0) throw new ChannelSignatureError('malformed signature header');
  if (Math.abs(now / 1000 - Number(t)) > toleranceSeconds) throw new ChannelSignatureError('timestamp outside the tolerance');
  const expected = hmac(secret, `${t}.${body}`, 'hex');
  if (!sigs.some((s) => sameText(s.toLowerCase(), expected))) throw new ChannelSignatureError('signature mismatch');
}

function verifyShopify(body: string, header: string | null, secret: string): void {
  if (!header) throw new ChannelSignatureError('missing X-Shopify-Hmac-Sha256 header');
  if (!sameText(header.trim(), signShopify(body, secret))) throw new ChannelSignatureError('signature mismatch');
}

const MAX_LINES = 100;
const text = (v: unknown, max = 255): string | null => (typeof v === 'string' && v.length >= 1 && v.length <= max ? v : typeof v === 'number' && Number.isSafeInteger(v) ? String(v) : null);

function lines(raw: unknown): { sku: string; quantity: number }[] {
  if (!Array.isArray(raw) || raw.length === 0 || raw.length > MAX_LINES) throw new ChannelPayloadError(`lines must be 1 to ${MAX_LINES} entries`);
  return raw.map((l: any, i) => {
    const sku = text(l?.sku, 64);
    const quantity = l?.quantity;
    if (!sku) throw new ChannelPayloadError(`lines[${i}].sku is missing`);
    if (!Number.isInteger(quantity) || quantity < 1 || quantity > 1_000_000) throw new ChannelPayloadError(`lines[${i}].quantity must be a positive integer`);
    return { sku, quantity };
  });
}

function json(body: string): any {
  try {
    return JSON.parse(body);
  } catch {
    throw new ChannelPayloadError('the body is not JSON');
  }
}

/**
 * Verifies and reads one delivery. Throws ChannelSignatureError (answer 400/401, no effect) or ChannelPayloadError
 * (answer 422, no effect).
 * SANDBOX body: `{eventId, type: "order.created" | "order.cancelled", externalOrderId, customer?, lines: [{sku, quantity}]}`.
 * SHOPIFY: topic `orders/create` or `orders/cancelled` (X-Shopify-Topic), event id from X-Shopify-Event-Id (or
 * X-Shopify-Webhook-Id on older API versions), the order's `admin_graphql_api_id` (or `id`) and `line_items`.
 */
export function readDelivery(
  kind: ChannelKind,
  secret: string,
  body: string,
  headers: Headers,
  opts: { toleranceSeconds: number; now?: number },
): ChannelEvent | IgnoredDelivery {
  if (kind === 'SANDBOX') {
    verifySandbox(body, headers.get(SANDBOX_SIGNATURE_HEADER), secret, opts.toleranceSeconds, opts.now ?? Date.now());
    const b = json(body);
    const eventId = text(b?.eventId);
    const externalOrderId = text(b?.externalOrderId);
    if (!eventId) throw new ChannelPayloadError('eventId is missing');
    if (!externalOrderId) throw new ChannelPayloadError('externalOrderId is missing');
    if (b.type !== 'order.created' && b.type !== 'order.cancelled') throw new ChannelPayloadError('type must be order.created or order.cancelled');
    return { eventId, type: b.type, externalOrderId, customer: text(b.customer) ?? 'marketplace', lines: b.type === 'order.created' ? lines(b.lines) : [] };
  }
  verifyShopify(body, headers.get('x-shopify-hmac-sha256'), secret);
  const topic = headers.get('x-shopify-topic');
  const eventId = text(headers.get('x-shopify-event-id') ?? headers.get('x-shopify-webhook-id'));
  if (topic !== 'orders/create' && topic !== 'orders/cancelled') return { ignored: `topic ${topic ?? '(none)'}` };
  if (!eventId) throw new ChannelPayloadError('X-Shopify-Event-Id (or X-Shopify-Webhook-Id) is missing');
  const b = json(body);
  // the REST id may exceed 2^53 (JSON numbers lose digits): the GraphQL id is the exact one
  const externalOrderId = text(b?.admin_graphql_api_id) ?? (/"id"\s*:\s*(\d{1,30})/.exec(body)?.[1] ?? null);
  if (!externalOrderId) throw new ChannelPayloadError('the order has no id');
  const customer = text(b?.customer?.admin_graphql_api_id) ?? 'marketplace';
  if (topic === 'orders/cancelled') return { eventId, type: 'order.cancelled', externalOrderId, customer, lines: [] };
  return { eventId, type: 'order.created', externalOrderId, customer, lines: lines(b?.line_items) };
}
