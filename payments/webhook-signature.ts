import { createHmac, timingSafeEqual } from 'node:crypto';
import { WebhookSignatureError } from './processor.js';
import { SIGNATURE_HEADER, readSignatureHeader } from '../common/webhook-signature.js';

export { SIGNATURE_HEADER };
export { signPayload } from '../common/webhook-signing.js';

/**
 * Throws WebhookSignatureError unless `header` carries a v1 signature of `body` by `secret` whose timestamp is within
 * `toleranceSeconds` of now (replays of old deliveries are refused). Constant-time comparison.
 */
export function verifySignature(
  body: string,
  header: string | null,
  secret: string,
  toleranceSeconds: number,
  now = Date.now(),
): void {
  const read = readSignatureHeader(header, toleranceSeconds, now);
  if ('problem' in read) throw new WebhookSignatureError(read.problem);
  const expected = createHmac('sha256', secret).update(`${read.timestamp}.${body}`, 'utf8').digest();
  const ok = read.signatures.some((s) => {
    const given = Buffer.from(s, 'hex');
    return given.length === expected.length && timingSafeEqual(given, expected);
  });
  if (!ok) throw new WebhookSignatureError('signature mismatch');
}
