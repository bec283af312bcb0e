// Random secrets (order tokens) on Node 20 and in Workers alike.

type NodeRandom = {
  randomBytes: (n: number) => Uint8Array & { toString: (enc: 'base64url', start: number, end: number) => string };
};
// Node: the kernel's CSPRNG read in 8 KiB at a time, each byte handed out once (one `randomBytes` call per 256 tokens
// instead of one `getRandomValues` call each, which costs more than the rest of minting a token on a busy request
// path; node:crypto's own randomUUID caches the same way). Workers: Web Crypto per call.
const nodeRandom = (
  globalThis as { process?: { getBuiltinModule?: (id: string) => unknown } }
).process?.getBuiltinModule?.('node:crypto') as NodeRandom | undefined;
const POOL_BYTES = 8192;
let pool: ReturnType<NodeRandom['randomBytes']> | undefined;
let used = POOL_BYTES;

/**
 * `bytes` fresh random bytes (at most 256) as base64url without padding.
 * @example randomBase64url(32) // 43 characters
 */
export function randomBase64url(bytes: number): string {
  if (bytes < 1 || bytes > 256) throw new RangeError('randomBase64url: 1 to 256 bytes');
  if (nodeRandom) {
    if (used + bytes > POOL_BYTES) {
      pool = nodeRandom.randomBytes(POOL_BYTES);
      used = 0;
    }
    const s = pool!.toString('base64url', used, used + bytes);
    pool!.fill(0, used, used + bytes); // handed out: not kept in memory
    used += bytes;
    return s;
  }
  let s = '';
  for (const b of crypto.getRandomValues(new Uint8Array(bytes))) s += String.fromCharCode(b);
  return btoa(s).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}
