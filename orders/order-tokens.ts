// Order tokens: how a `public` key (one that lives in browsers, so every browser shares its client) reaches one order.
// The token is minted when the order is created, handed out once (PlaceOrderPayload.orderToken) and kept only as its
// SHA-256; `order`, `releaseReservation` and `orderStatusChanged` take it back as `token`.
import type { Caller } from '../common/caller.js';
import { sha256Hex } from '../common/hash.js';
import { randomBase64url } from '../common/random.js';

/** 32 random bytes, base64url: `ot_` + 43 characters. */
export const mintOrderToken = (): string => `ot_${randomBase64url(32)}`;

export const hashOrderToken = (token: string) => sha256Hex(token);

/** Roles that see only the orders whose token they present; every other role sees its own client's orders. */
export const needsOrderToken = (caller: Pick<Caller, 'role'>) => caller.role === 'public';

/**
 * What a caller must match to reach an order: nothing more than its client for server-side keys; for a public key,
 * the hash of the token it presented ('' when it presented none, which matches no order).
 */
export async function tokenScope(
  caller: Pick<Caller, 'role'>,
  token: string | null | undefined,
): Promise<string | undefined> {
  if (!needsOrderToken(caller)) return undefined;
  return token ? hashOrderToken(token) : '';
}
