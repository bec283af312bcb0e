// Marketplace order webhooks as one normalized event: the signature verified on the raw body first (SANDBOX:
// lastunit's `x-lastunit-signature`; SHOPIFY: Shopify's `X-Shopify-Hmac-Sha256`), then the signed body read: it alone
// says what the delivery does and which event it is. Pure: no I/O.
// No node:crypto: the admin channel operations reach this file from the worker bundle too. Verification is Web Crypto
// (globalThis.crypto.subtle on Node 20 and Workers): crypto.subtle.verify compares the MAC in constant time.
// Signing (the sandbox, tests) is channels/sign.ts.

import { SIGNATURE_HEADER, readSignatureHeader } from '../common/webhook-signature.js';
import { sha256Hex } from '../common/hash.js';

export const SANDBOX_SIGNATURE_HEADER = SIGNATURE_HEADER;

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

const utf8 = new TextEncoder();

/** True when `mac` is HMAC-SHA256(secret, message), compared in constant time by Web Crypto. */
async function verifyHmac(secret: string, message: string, mac: Uint8Array<ArrayBuffer>): Promise<boolean> {
  if (mac.length !== 32) return false;
  const key = await crypto.subtle.importKey('raw', utf8.encode(secret), { name: 'HMAC', hash: 'SHA-256' }, false, [
    'verify',
  ]);
  return crypto.subtle.verify('HMAC', key, mac, utf8.encode(message));
}

function fromHex(hex: string): Uint8Array<ArrayBuffer> | null {
  if (!/^[0-9a-fA-F]{64}$/.test(hex)) return null;
  const out = new Uint8Array(32);
  for (let i = 0; i < 32; i++) out[i] = parseInt(hex.slice(i * 2, i * 2 + 2), 16);
  return out;
}

function fromBase64(b64: string): Uint8Array<ArrayBuffer> | null {
  if (!/^[A-Za-z0-9+/]{43}=$/.test(b64)) return null;
  const bin = atob(b64);
  return Uint8Array.from(bin, (c) => c.charCodeAt(0));
}

async function verifySandbox(
  body: string,
  header: string | null,
  secret: string,
  toleranceSeconds: number,
  now: number,
): Promise<void> {
  const read = readSignatureHeader(header, toleranceSeconds, now);
  if ('problem' in read) throw new ChannelSignatureError(read.problem);
  for (const s of read.signatures) {
    const mac = fromHex(s);
    if (mac && (await verifyHmac(secret, `${read.timestamp}.${body}`, mac))) return;
  }
  throw new ChannelSignatureError('signature mismatch');
}

async function verifyShopify(body: string, header: string | null, secret: string): Promise<void> {
  if (!header) throw new ChannelSignatureError('missing X-Shopify-Hmac-Sha256 header');
  const mac = fromBase64(header.trim());
  if (!mac || !(await verifyHmac(secret, body, mac))) throw new ChannelSignatureError('signature mismatch');
}

const MAX_LINES = 100;
const text = (v: unknown, max = 255): string | null =>
  typeof v === 'string' && v.length >= 1 && v.length <= max
    ? v
    : typeof v === 'number' && Number.isSafeInteger(v)
      ? String(v)
      : null;

function lines(raw: unknown): { sku: string; quantity: number }[] {
  if (!Array.isArray(raw) || raw.length === 0 || raw.length > MAX_LINES)
    throw new ChannelPayloadError(`lines must be 1 to ${MAX_LINES} entries`);
  return raw.map((l: any, i) => {
    const sku = text(l?.sku, 64);
    const quantity = l?.quantity;
    if (!sku) throw new ChannelPayloadError(`lines[${i}].sku is missing`);
    if (!Number.isInteger(quantity) || quantity < 1 || quantity > 1_000_000)
      throw new ChannelPayloadError(`lines[${i}].quantity must be a positive integer`);
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
 * (answer 422, no effect). What a delivery does, and which event it is (I8), come only from what the marketplace signs:
 * anyone who saw one delivery can resend it with other headers.
 * SANDBOX: lastunit's scheme signs the timestamp and the body, which says it all:
 * `{eventId, type: "order.created" | "order.cancelled", externalOrderId, customer?, lines: [{sku, quantity}]}`.
 * SHOPIFY: Shopify signs the body only (X-Shopify-Topic and X-Shopify-Event-Id are not signed), so the body decides: an
 * order (`admin_graphql_api_id` gid://shopify/Order/..., or a REST `id` with `line_items`) whose `cancelled_at` is set
 * is a cancellation, any other is the order (created, or a duplicate of it); the event's identity is the SHA-256 of the
 * body, so a body seen before is a duplicate whatever its headers say. A topic that is not an order topic can only make
 * a delivery ignored (which records nothing), never change what a signed order body does.
 */
export async function readDelivery(
  kind: ChannelKind,
  secret: string,
  body: string,
  headers: Headers,
  opts: { toleranceSeconds: number; now?: number },
): Promise<ChannelEvent | IgnoredDelivery> {
  if (kind === 'SANDBOX') {
    await verifySandbox(
      body,
      headers.get(SANDBOX_SIGNATURE_HEADER),
      secret,
      opts.toleranceSeconds,
      opts.now ?? Date.now(),
    );
    const b = json(body);
    const eventId = text(b?.eventId);
    const externalOrderId = text(b?.externalOrderId);
    if (!eventId) throw new ChannelPayloadError('eventId is missing');
    if (!externalOrderId) throw new ChannelPayloadError('externalOrderId is missing');
    if (b.type !== 'order.created' && b.type !== 'order.cancelled')
      throw new ChannelPayloadError('type must be order.created or order.cancelled');
    return {
      eventId,
      type: b.type,
      externalOrderId,
      customer: text(b.customer) ?? 'marketplace',
      lines: b.type === 'order.created' ? lines(b.lines) : [],
    };
  }
  await verifyShopify(body, headers.get('x-shopify-hmac-sha256'), secret);
  const topic = headers.get('x-shopify-topic');
  if (topic !== null && !topic.startsWith('orders/')) return { ignored: `topic ${topic}` };
  const b = json(body);
  const gid = text(b?.admin_graphql_api_id);
  if (gid ? !/^gid:\/\/shopify\/Order\/\d{1,30}$/.test(gid) : !Array.isArray(b?.line_items))
    return { ignored: 'not an order' };
  // the REST id may exceed 2^53 (JSON numbers lose digits): the GraphQL id is the exact one
  const externalOrderId = gid ?? /"id"\s*:\s*(\d{1,30})/.exec(body)?.[1] ?? null;
  if (!externalOrderId) throw new ChannelPayloadError('the order has no id');
  const eventId = `sha256:${await sha256Hex(body)}`;
  const customer = text(b?.customer?.admin_graphql_api_id) ?? 'marketplace';
  if (b.cancelled_at != null && b.cancelled_at !== '')
    return { eventId, type: 'order.cancelled', externalOrderId, customer, lines: [] };
  return { eventId, type: 'order.created', externalOrderId, customer, lines: lines(b?.line_items) };
}
