// Signing marketplace webhooks the way a marketplace does, for the Node-only marketplace sandbox, kit/ and tests.
// node:crypto: never imported by code the worker bundle reaches (verification is channels/inbound.ts, Web Crypto).
import { createHmac } from 'node:crypto';

/** lastunit's own scheme (common/webhook-signature.ts), as the payment sandbox signs. */
export { signPayload as signSandbox } from '../common/webhook-signing.js';

/** Shopify's `X-Shopify-Hmac-Sha256`: base64 HMAC-SHA256 of the raw body with the app's secret. */
export function signShopify(body: string, secret: string): string {
  return createHmac('sha256', secret).update(body, 'utf8').digest('base64');
}
