// Who one buyer is, for the hold limit (I14) and the per-buyer rate limit on placeOrder. A server-side key vouches for
// its customers, so each customerId is a buyer; a public key sits in browsers, where customerId is whatever the page
// sends, so there the buyer is the client's address.
import type { Caller } from '../common/caller.js';

/**
 * The buyer a placeOrder counts against: `customer:<id>` for storefront, partner and admin keys, `ip:<address>` for
 * public keys (`ip:unknown` when the host could not tell, so such callers share one budget rather than none).
 * @example buyerOf({ clientId: 'shop', role: 'public', ip: '203.0.113.7' }, 'c1') // 'ip:203.0.113.7'
 */
export function buyerOf(caller: Pick<Caller, 'role' | 'ip'>, customerId: string): string {
  return caller.role === 'public' ? `ip:${caller.ip ?? 'unknown'}` : `customer:${customerId}`;
}
