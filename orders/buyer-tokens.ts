// Buyer tokens: how a shop vouches for the customer behind a public key (in the spirit of Shopify's buyer identity).
// The shop's backend, with its secret storefront key, mints a short-lived token for one of its customers
// (createBuyerToken); the browser sends it with placeOrder (`buyerToken`), and the purchase and hold limits of a
// public key then count that customer instead of the client's address (orders/buyer.ts). The token is signed by this
// server (HMAC-SHA256 with BUYER_TOKEN_SECRET) and names the API client it was minted for, so neither a browser nor
// another client can mint or reuse one. Nothing is stored: a token is valid until it expires.
import { equalInConstantTime, hmacBase64url } from '../common/hmac.js';
import { refuse, type DomainError, type Result } from './errors.js';
import { MAX_CUSTOMER_ID_LENGTH } from './rules.js';

export const DEFAULT_BUYER_TOKEN_TTL_SECONDS = 3600;
export const MAX_BUYER_TOKEN_TTL_SECONDS = 86_400;
/** Longer than any token this server mints (a customerId of 255 characters, JSON-escaped); longer is not a token. */
export const MAX_BUYER_TOKEN_LENGTH = 2048;

/** What a valid token vouches for. */
export type VouchedBuyer = { clientId: string; customerId: string; expiresAt: Date };

export type BuyerTokens = {
  /** a token for `customerId` of API client `clientId`, valid for `ttlSeconds` */
  mint(clientId: string, customerId: string, ttlSeconds: number): Promise<{ token: string; expiresAt: Date }>;
  /** what `token` vouches for, or null when it is not one this server signed, or it expired */
  verify(token: string): Promise<VouchedBuyer | null>;
};

const PREFIX = 'bt_';
// the MAC covers a label as well as the claims: no other value this server signs with the same secret can pass as one
const signed = (claims: string) => `lastunit buyer token v1.${claims}`;
const toBase64url = (s: string) =>
  btoa(String.fromCharCode(...new TextEncoder().encode(s)))
    .replace(/\+/g, '-')
    .replace(/\//g, '_')
    .replace(/=+$/, '');
const fromBase64url = (s: string) => {
  const bytes = Uint8Array.from(atob(s.replace(/-/g, '+').replace(/_/g, '/')), (c) => c.charCodeAt(0));
  return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
};

/**
 * Mints and verifies buyer tokens with `secret`: `bt_<base64url claims>.<base64url HMAC>`, the claims
 * `{"c": client, "u": customer, "x": expiry in unix seconds}`.
 * @example const tokens = buyerTokens(config.buyerTokenSecret); const { token } = await tokens.mint('shop', 'c1', 900)
 */
export function buyerTokens(secret: string, now: () => number = Date.now): BuyerTokens {
  return {
    async mint(clientId, customerId, ttlSeconds) {
      const x = Math.floor(now() / 1000) + ttlSeconds;
      const claims = toBase64url(JSON.stringify({ c: clientId, u: customerId, x }));
      return {
        token: `${PREFIX}${claims}.${await hmacBase64url(secret, signed(claims))}`,
        expiresAt: new Date(x * 1000),
      };
    },
    async verify(token) {
      if (token.length > MAX_BUYER_TOKEN_LENGTH || !token.startsWith(PREFIX)) return null;
      const [claims, mac, ...rest] = token.slice(PREFIX.length).split('.');
      if (!claims || !mac || rest.length > 0) return null;
      if (!equalInConstantTime(mac, await hmacBase64url(secret, signed(claims)))) return null;
      let c: { c?: unknown; u?: unknown; x?: unknown };
      try {
        c = JSON.parse(fromBase64url(claims));
      } catch {
        return null;
      }
      if (typeof c.c !== 'string' || typeof c.u !== 'string' || typeof c.x !== 'number') return null;
      if (c.x * 1000 <= now()) return null;
      return { clientId: c.c, customerId: c.u, expiresAt: new Date(c.x * 1000) };
    },
  };
}

export type CreateBuyerTokenInput = { customerId: string; ttlSeconds?: number | null };

/**
 * The createBuyerToken use case: a token for one customer of the caller's API client (a storefront or admin key; the
 * schema refuses other roles). Absent `tokens`: this server accepts no buyer tokens (BUYER_TOKEN_SECRET unset).
 * @example await createBuyerToken(tokens, { clientId: 'shop' }, { customerId: 'c1', ttlSeconds: 900 })
 */
export async function createBuyerToken(
  tokens: BuyerTokens | undefined,
  caller: { clientId: string },
  input: CreateBuyerTokenInput,
): Promise<Result<{ token: string; expiresAt: Date }>> {
  const errors: DomainError[] = [];
  const { customerId } = input;
  const ttl = input.ttlSeconds ?? DEFAULT_BUYER_TOKEN_TTL_SECONDS;
  if (customerId.trim().length === 0 || customerId.length > MAX_CUSTOMER_ID_LENGTH || customerId.includes('\u0000')) {
    const message = `customerId must be 1 to ${MAX_CUSTOMER_ID_LENGTH} characters, no NUL`;
    errors.push(refuse('INVALID_INPUT', message, ['customerId']));
  }
  if (!Number.isInteger(ttl) || ttl < 1 || ttl > MAX_BUYER_TOKEN_TTL_SECONDS)
    errors.push(
      refuse('INVALID_INPUT', `ttlSeconds must be between 1 and ${MAX_BUYER_TOKEN_TTL_SECONDS}`, ['ttlSeconds']),
    );
  if (!tokens)
    errors.push(refuse('INVALID_INPUT', 'this server issues no buyer tokens (BUYER_TOKEN_SECRET is not set)'));
  if (errors.length) return { ok: false, errors };
  return { ok: true, value: await tokens!.mint(caller.clientId, customerId, ttl) };
}
