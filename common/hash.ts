// SHA-256 for request fingerprints, client ids and persisted-operation ids, on Node 20 and in Workers alike.

type NodeCrypto = {
  createHash: (alg: string) => { update: (s: string) => { digest: (enc: 'hex') => string } };
  /** one-shot digest (Node >= 20.12): no Hash object per call */
  hash?: (alg: string, data: string, enc: 'hex') => string;
};
// Node: hash synchronously with node:crypto (Web Crypto's digest hands every call to a worker thread and back, which
// on a busy request path costs more than the hash). Workers (no nodejs_compat): Web Crypto. Same digest either way.
const nodeCrypto = (
  globalThis as { process?: { getBuiltinModule?: (id: string) => unknown } }
).process?.getBuiltinModule?.('node:crypto') as NodeCrypto | undefined;

const nodeHash = nodeCrypto?.hash?.bind(nodeCrypto);

/**
 * SHA-256 of `text` as lowercase hex: node:crypto where there is one, else Web Crypto.
 * @example await sha256Hex('{ __typename }')
 */
export async function sha256Hex(text: string): Promise<string> {
  if (nodeHash) return nodeHash('sha256', text, 'hex');
  if (nodeCrypto) return nodeCrypto.createHash('sha256').update(text).digest('hex');
  const digest = await crypto.subtle.digest('SHA-256', new TextEncoder().encode(text));
  return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, '0')).join('');
}
