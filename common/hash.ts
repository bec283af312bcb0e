// SHA-256 for request fingerprints, client ids and persisted-operation ids, on Node 20 and in Workers alike.

/**
 * SHA-256 of `text` as lowercase hex, with Web Crypto.
 * @example await sha256Hex('{ __typename }')
 */
export async function sha256Hex(text: string): Promise<string> {
  const digest = await crypto.subtle.digest('SHA-256', new TextEncoder().encode(text));
  return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, '0')).join('');
}
