// lastunit's own webhook signature scheme, the payment sandbox's and SANDBOX marketplaces': the header
// `x-lastunit-signature: t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<raw body>")>` (Stripe's shape). The header
// is read here, once for both; each side checks the MAC with the crypto its host has (payments/webhook-signature.ts:
// node:crypto; channels/inbound.ts: Web Crypto, which the worker bundle reaches). Signing: common/webhook-signing.ts.

export const SIGNATURE_HEADER = 'x-lastunit-signature';

/**
 * The timestamp and the v1 signatures (at most 8) of a signature header, or why it is refused: missing, malformed, or a
 * timestamp further than `toleranceSeconds` from `now` (replays of old deliveries are refused).
 */
export function readSignatureHeader(
  header: string | null,
  toleranceSeconds: number,
  now: number,
): { timestamp: string; signatures: string[] } | { problem: string } {
  if (!header) return { problem: `missing ${SIGNATURE_HEADER} header` };
  const parts = header.split(',').map((p) => p.trim().split('='));
  const timestamp = parts.find(([k]) => k === 't')?.[1];
  const signatures = parts.filter(([k]) => k === 'v1').map(([, v]) => v ?? '');
  if (!timestamp || !/^\d+$/.test(timestamp) || signatures.length === 0)
    return { problem: 'malformed signature header' };
  if (Math.abs(now / 1000 - Number(timestamp)) > toleranceSeconds)
    return { problem: 'timestamp outside the tolerance' };
  return { timestamp, signatures: signatures.slice(0, 8) };
}
