// Who one buyer is, for every limit that counts buyers: the purchase limit (I12), the hold limit (I14) and the per-buyer
// rate limit on placeOrder. A server-side key vouches for its customers, so each customerId is a buyer. A public key
// sits in browsers, where customerId is whatever the page sends: there the buyer is the customer a buyer token names
// (the shop's backend vouched for it: orders/buyer-tokens.ts), and without one the client's address, whatever
// customerId says.
import type { Caller } from '../common/caller.js';
import { refuse, type DomainError } from './errors.js';
import type { BuyerTokens } from './buyer-tokens.js';

export type Buyer = {
  /**
   * whom the hold limit and the per-buyer rate limit count: `customer:<id>`, or `ip:<address>` (`ip:unknown` when the
   * host could not tell: such callers share one budget rather than none)
   */
  id: string;
  /**
   * whom the purchase counter counts, when it is not the order's customerId: the address of a public key's buyer
   * without a token (`ip:<address>`); null: the customerId
   */
  countedCustomer: string | null;
};
export type BuyerResult = { ok: true; buyer: Buyer } | { ok: false; errors: DomainError[] };

/**
 * The buyer a placeOrder counts against. `buyerToken` is read for public keys only (a server-side key's customerId is
 * vouched for already); a token that is not valid for this client, or names another customer than `customerId`, is
 * INVALID_INPUT. `tokens` absent: this host accepts no buyer tokens.
 * @example await buyerOf({ clientId: 'shop', role: 'public', ip: '203.0.113.7' }, { customerId: 'c1' }, tokens)
 *   // { ok: true, buyer: { id: 'ip:203.0.113.7', countedCustomer: 'ip:203.0.113.7' } }
 */
export async function buyerOf(
  caller: Pick<Caller, 'clientId'> & Partial<Caller>,
  input: { customerId: string; buyerToken?: string | null },
  tokens: BuyerTokens | undefined,
): Promise<BuyerResult> {
  // a caller without a role is a server-side one (the domain called directly)
  if (caller.role !== 'public')
    return { ok: true, buyer: { id: `customer:${input.customerId}`, countedCustomer: null } };
  if (input.buyerToken == null) {
    const address = `ip:${caller.ip ?? 'unknown'}`;
    return { ok: true, buyer: { id: address, countedCustomer: address } };
  }
  const vouched = tokens ? await tokens.verify(input.buyerToken) : null;
  const refused = (message: string, field: string): BuyerResult => ({
    ok: false,
    errors: [refuse('INVALID_INPUT', message, [field])],
  });
  if (!vouched || vouched.clientId !== caller.clientId)
    return refused(
      'buyerToken is not a valid buyer token of this API client (expired, altered, another client)',
      'buyerToken',
    );
  if (vouched.customerId !== input.customerId)
    return refused("customerId must be the buyer token's customer", 'customerId');
  return { ok: true, buyer: { id: `customer:${input.customerId}`, countedCustomer: null } };
}
