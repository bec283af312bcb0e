// The per-buyer limit on placeOrder: one storefront key carries every shopper, so its key limit is sized for a whole
// sale; what stops one shopper (or one address on a public key) from hammering placeOrder is this one.
import { createGraphQLError } from 'graphql-yoga';
import type { Caller } from '../common/caller.js';
import { countRequest, rateLimitHeaders, type RateLimitStore } from './rate-limit.js';

/**
 * Admits `n` placeOrders (default 1) of `buyer` (orders/buyer.ts) at once, or throws RATE_LIMITED (HTTP 429,
 * Retry-After). The operation guard (app/use-operation-guard.ts) admits every placeOrder of an operation before any runs.
 */
export type AdmitBuyer = (caller: Caller, buyer: string, n?: number) => Promise<void>;

/**
 * `limit` placeOrder requests per buyer per `windowSeconds` (0: off), counted per API client, in the same store as
 * the key limit. Past it: a GraphQL error with code RATE_LIMITED, HTTP 429, `Retry-After` and the buyer's RateLimit-*
 * figures; nothing is executed. An operation whose placeOrders would take the buyer past the limit is refused whole.
 * A failing store lets the request through (told to `onStoreError`).
 * @example const admit = buyerRateLimit({ limit: 20, windowSeconds: 60, store }); await admit(caller, 'customer:c1')
 */
export function buyerRateLimit(opts: {
  limit: number;
  windowSeconds: number;
  store: RateLimitStore;
  onStoreError?: (err: unknown) => void;
}): AdmitBuyer {
  return async (caller, buyer, n = 1) => {
    const v = await countRequest(opts, `rlb:${caller.clientId}:${buyer}`, opts.limit, n);
    if (!v || v.allowed) return;
    throw createGraphQLError(
      `rate limit of ${v.limit} placeOrder requests per ${v.windowSeconds}s exceeded for this buyer`,
      {
        extensions: {
          code: 'RATE_LIMITED',
          scope: 'buyer',
          retryAfterSeconds: v.resetSeconds,
          http: { status: 429, headers: { ...rateLimitHeaders(v), 'Retry-After': String(v.resetSeconds) } },
        },
      },
    );
  };
}
