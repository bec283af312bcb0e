import { createHmac, timingSafeEqual } from 'node:crypto';
import { WebhookSignatureError } from './processor.js';

export const SIGNATURE_HEADER = 'x-lastunit-signature';

/**
 * The header value for `body` signed at `timestamp` (seconds): `t=<ts>,v1=<hex HMAC-SHA256(secret, "<ts>.<body>")>`,
 * the same scheme as Stripe's, so one mental model covers both.
 * @example headers[SIGNATURE_HEADER] = signPayload(body, secret)
 */
export function signPayload(body: string, secret: string, timestamp = Math.floor(Date.now() / 1000)): string {
  return `t=${timestamp},v1=${hmac(secret, `${timestamp}.${body}`)}`;
}

/**
 * Throws WebhookSignatureError unless `header` carries a v1 signature of `body` by `secret` whose timestamp is within
 * `toleranceSeconds` of now (replays of old deliveries are refused). Constant-time comparison.
 */
export function verifySignature(body: string, header: string | null, secret: string, toleranceSeconds: number, now = Date.now()): void {
  if (!header) throw new WebhookSignatureError('missing signature header');
  const parts = header.split(',').map((p) => p.trim().split('='));
  const t = parts.find(([k]) => k === 't')?.[1];
  const sigs = parts.filter(([k]) => k === 'v1').map(([, v]) => v ?? '');
  if (!t || !/^\d+$/.test(t) || sigs.length === 0) throw new WebhookSignatureError('malformed signature header');
  if (Math.abs(now / 1000 - Number(t)) > toleranceSeconds) throw new WebhookSignatureError('timestamp outside the tolerance');
  const expected = Buffer.from(hmac(secret, `${t}.${body}`), 'hex');
  const ok = sigs.some((s) => {
    const given = Buffer.from(s, 'hex');
    return given.length === expected.length && timingSafeEqual(given, expected);
  });
  if (!ok) throw new WebhookSignatureError('signature mismatch');
}

function hmac(secret: string, text: string): string {
  return createHmac('sha256', secret).update(text, 'utf8').digest('hex');
}
