// HMAC-SHA256 for tokens this server signs and later verifies itself (buyer tokens), on Node 20 and in Workers alike.

type Hmac = { update: (s: string, enc: 'utf8') => { digest: (enc: 'base64url') => string } };
type NodeCrypto = { createHmac: (alg: string, key: string) => Hmac };
// Node: node:crypto, synchronously (Web Crypto hands every call to a worker thread and back). Workers: Web Crypto.
const host = globalThis as { process?: { getBuiltinModule?: (id: string) => unknown } };
const nodeCrypto = host.process?.getBuiltinModule?.('node:crypto') as NodeCrypto | undefined;

const utf8 = new TextEncoder();
const webKeys = new Map<string, Promise<CryptoKey>>();

/**
 * base64url (no padding) of HMAC-SHA256(secret, message).
 * @example await hmacBase64url('server-secret', 'payload') // 43 characters
 */
export async function hmacBase64url(secret: string, message: string): Promise<string> {
  if (nodeCrypto) return nodeCrypto.createHmac('sha256', secret).update(message, 'utf8').digest('base64url');
  let key = webKeys.get(secret);
  if (!key) {
    key = crypto.subtle.importKey('raw', utf8.encode(secret), { name: 'HMAC', hash: 'SHA-256' }, false, ['sign']);
    webKeys.set(secret, key);
  }
  const mac = new Uint8Array(await crypto.subtle.sign('HMAC', await key, utf8.encode(message)));
  let s = '';
  for (const b of mac) s += String.fromCharCode(b);
  return btoa(s).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

/** True when two strings are equal, in time that depends only on their length (a MAC compared with one presented). */
export function equalInConstantTime(a: string, b: string): boolean {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a.charCodeAt(i) ^ b.charCodeAt(i);
  return diff === 0;
}
