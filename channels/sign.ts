// Signing marketplace webhooks the way a marketplace does, for the Node-only marketplace sandbox, kit/ and tests.
// node:crypto: never imported by code the worker bundle reaches (verification is channels/inbound.ts, Web Crypto).
import { createHmac } from 'node:crypto';

/**
 * `t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<raw body>")>`, the scheme of lastunit's payment sandbox.
 * @example headers[SANDBOX_SIGNATURE_HEADER] = signSandbox(body, secret)
 */
export function signSandbox(body: string, secret: string, timestamp = Math.floor(Date.now() / 1000)): string {
  return `t=${timestamp},v1=${createHmac('sha256', secret).update(`${timestamp}.${body}`, 'utf8').digest('hex')}`;
}

/** Shopify's `X-Shopify-Hmac-Sha256`: base64 HMAC-SHA256 of the raw body with the app's secret. */
export function signShopify(body: string, secret: string): string {
  return createHmac('sha256', secret).update(body, 'utf8').digest('base64');
}
