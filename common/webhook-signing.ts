// Signing in lastunit's webhook signature scheme (common/webhook-signature.ts), for the Node-only senders: the payment
// sandbox, the marketplace sandbox, kit/ and tests. node:crypto: never imported by code the worker bundle reaches.
import { createHmac } from 'node:crypto';

/**
 * The header value for `body` signed at `timestamp` (seconds): `t=<ts>,v1=<hex HMAC-SHA256(secret, "<ts>.<body>")>`.
 * @example headers[SIGNATURE_HEADER] = signPayload(body, secret)
 */
export function signPayload(body: string, secret: string, timestamp = Math.floor(Date.now() / 1000)): string {
  return `t=${timestamp},v1=${createHmac('sha256', secret).update(`${timestamp}.${body}`, 'utf8').digest('hex')}`;
}
