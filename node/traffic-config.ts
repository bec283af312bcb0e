// The Node host's traffic bounds: rate limits per key and per buyer, the client address behind proxies, and the
// graphql-ws socket limits. Parsed with the rest of the configuration by node/config.ts.
import { z } from 'zod';
import { int } from '../common/config-fields.js';
import type { RoleLimits } from '../app/rate-limit.js';

/**
 * Requests per API key per window by role. A server-side key carries a whole shop's shoppers, so these stop a runaway
 * client, not a sale: storefront and public keys get 300,000 a minute (5,000/s), over ten times what one instance
 * serves (the flash-sale bench's hot SKU through one storefront key: 436 placeOrders/s on a shared 2-core box);
 * partner integrations 60,000 (1,000/s); admin tooling 6,000 (100/s). One shopper is bounded by the per-buyer limit.
 */
export const DEFAULT_ROLE_LIMITS: Required<RoleLimits> = { public: 300_000, storefront: 300_000, partner: 60_000, admin: 6_000 };

const optionalCount = z
  .string()
  .optional()
  .transform((v, ctx) => {
    if (v === undefined || v.trim() === '') return undefined;
    if (!/^\d+$/.test(v.trim())) {
      ctx.addIssue({ code: 'custom', message: `must be an integer >= 0, got "${v}"` });
      return z.NEVER;
    }
    return Number(v);
  });

export const trafficFields = {
  // absent: the role defaults above; a number: that limit for every role; 0: no per-key limit
  RATE_LIMIT_PER_WINDOW: optionalCount,
  RATE_LIMIT_WINDOW_SECONDS: int(1, 60),
  RATE_LIMIT_BUYER_PER_WINDOW: int(0, 30),
  TRUST_PROXY: int(0, 0),
  MAX_SUBSCRIPTIONS_PER_SOCKET: int(1, 100),
  MAX_SOCKETS_PER_CLIENT: int(1, 100),
  MAX_SOCKETS_PER_IP: int(1, 32),
  // test-only: GET /__diagnostics (heap after a full GC, live listeners), never in production
  LASTUNIT_TEST_DIAGNOSTICS: z.enum(['on', 'off']).default('off'),
};

export type TrafficConfig = {
  rateLimit: { limit: number | RoleLimits; windowSeconds: number; buyerLimit: number };
  /** proxies in front of this host whose X-Forwarded-For is believed (0: the connection's address is the client's) */
  trustProxy: number;
  ws: { maxSubscriptionsPerSocket: number; maxSocketsPerClient: number; maxSocketsPerIp: number };
  testDiagnostics: boolean;
};

type Parsed = { [K in keyof typeof trafficFields]: z.output<(typeof trafficFields)[K]> };

export function toTrafficConfig(c: Parsed): TrafficConfig {
  return {
    rateLimit: {
      limit: c.RATE_LIMIT_PER_WINDOW ?? DEFAULT_ROLE_LIMITS,
      windowSeconds: c.RATE_LIMIT_WINDOW_SECONDS,
      buyerLimit: c.RATE_LIMIT_BUYER_PER_WINDOW,
    },
    trustProxy: c.TRUST_PROXY,
    ws: {
      maxSubscriptionsPerSocket: c.MAX_SUBSCRIPTIONS_PER_SOCKET,
      maxSocketsPerClient: c.MAX_SOCKETS_PER_CLIENT,
      maxSocketsPerIp: c.MAX_SOCKETS_PER_IP,
    },
    testDiagnostics: c.LASTUNIT_TEST_DIAGNOSTICS === 'on',
  };
}
