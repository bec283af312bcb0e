// The configuration sections both hosts read (Node: node/config.ts, Workers: edge/worker-config.ts): each setting's
// variable, parser and default, written once; the types are inferred from them.
import { z } from 'zod';
import type { ApiKey } from './caller.js';
import { int, onOff, setting, text } from './config-fields.js';

/** Request limits (docs/edge.md has the table). */
export const limitSettings = z.object({
  /** larger request bodies get 413; a larger graphql-ws message closes its socket */
  maxBodyBytes: setting('MAX_BODY_BYTES', int(256, 65_536)),
  maxDepth: setting('MAX_DEPTH', int(1, 8)),
  maxAliases: setting('MAX_ALIASES', int(0, 15)),
  maxTokens: setting('MAX_TOKENS', int(10, 1_000)),
  maxCost: setting('MAX_COST', int(10, 1_000)),
});
export type Limits = z.infer<typeof limitSettings>;

/**
 * Database session bounds (pg on Node, Neon on Workers): how long to wait for a connection, a statement, a lock, and
 * an open transaction that does nothing (docs/database.md). 0 turns one off.
 */
export const databaseTimeoutSettings = z.object({
  connectMs: setting('DATABASE_CONNECT_TIMEOUT_MS', int(0, 5_000)),
  statementMs: setting('DATABASE_STATEMENT_TIMEOUT_MS', int(0, 30_000)),
  lockMs: setting('DATABASE_LOCK_TIMEOUT_MS', int(0, 10_000)),
  idleInTransactionMs: setting('DATABASE_IDLE_IN_TRANSACTION_TIMEOUT_MS', int(0, 60_000)),
});
export type DatabaseTimeouts = z.infer<typeof databaseTimeoutSettings>;

/** What the domain's order use cases are given (orders/place-order.ts and the catalog's stock writes). */
export const orderSettings = z.object({
  /** how long an unpaid hold keeps its units */
  holdTtlSeconds: setting('HOLD_TTL_SECONDS', int(1, 600)),
  /** how long an idempotency key is remembered */
  idempotencyRetentionHours: setting('IDEMPOTENCY_RETENTION_HOURS', int(1, 24)),
  maxLines: setting('MAX_LINES', int(1, 50)),
  maxLineQuantity: setting('MAX_LINE_QUANTITY', int(1, 100)),
  /** active holds per buyer (I14): a shopper rarely has more than a few carts in flight; 0 = no limit */
  maxActiveHolds: setting('MAX_ACTIVE_HOLDS', int(0, 5)),
  /**
   * concurrent single-line claims of one SKU share one transaction; off: every claim is sent alone, so concurrent
   * claims meet in PostgreSQL instead of queueing in this process
   */
  claimBatching: setting('CLAIM_BATCHING', onOff('on')),
  /** batches of one SKU in flight at once */
  claimBatchesInFlight: setting('CLAIM_BATCHES_IN_FLIGHT', int(1, 1)),
  /**
   * lanes of a SKU with stock buckets, each with its batches in flight (at most one per bucket): more lanes, more of
   * its batches commit at once, each smaller. Absent: the Node host's cores over its processes (node/config.ts), 1
   * elsewhere (docs/capacity.md)
   */
  claimLanesPerSku: setting('CLAIM_LANES_PER_SKU', int<undefined>(1, undefined)),
  /** entries per drop from one client address on public keys (docs/drops.md) */
  dropEntriesPerAddress: setting('DROP_ENTRIES_PER_ADDRESS', int(1, 3)),
  /** how long the head of a waitlist has to pay for the unit it was handed (its order's hold) */
  waitlistClaimSeconds: setting('WAITLIST_CLAIM_SECONDS', int(1, 900)),
});
export type OrderSettings = z.infer<typeof orderSettings>;

/** Production keys are long enough not to be guessed: shorter `API_KEYS` entries refuse a production start. */
export const PRODUCTION_MIN_KEY_LENGTH = 24;

/**
 * The production profile's check of API keys: one line per key shorter than PRODUCTION_MIN_KEY_LENGTH, naming its
 * position, never the key.
 * @example shortKeyProblems(keys) // ['entry 2 of 3 is shorter than 24 characters (required in production)']
 */
export function shortKeyProblems(keys: ApiKey[]): string[] {
  return keys.flatMap((k, i) =>
    k.key.length < PRODUCTION_MIN_KEY_LENGTH
      ? [
          `entry ${i + 1} of ${keys.length} is shorter than ${PRODUCTION_MIN_KEY_LENGTH} characters` +
            ' (required in production)',
        ]
      : [],
  );
}

/**
 * Buyer tokens (orders/buyer-tokens.ts): the secret that signs and checks them. A published development secret stands
 * in outside production on the Node host (`devDefault`); with NODE_ENV=production it must be set, 32+ characters and
 * not that one, since whoever holds it can mint tokens and buy past a purchase limit. Without `devDefault` (Workers)
 * an absent secret means no tokens are minted or accepted there.
 */
export const DEV_BUYER_TOKEN_SECRET = 'bts_lastunit_dev_only_not_secret';
export const BUYER_TOKEN_SECRET_MIN_LENGTH = 32;
export const buyerTokenSettings = (runtime: { nodeEnv: string }, devDefault = true) =>
  z
    .object({ secret: setting('BUYER_TOKEN_SECRET', text) })
    .superRefine((s, ctx) => {
      const problem = (message: string) => ctx.addIssue({ code: 'custom', path: ['secret'], message });
      const production = runtime.nodeEnv === 'production';
      if (!s.secret) {
        if (production && devDefault) problem('required with NODE_ENV=production (the development secret is public)');
      } else if (s.secret === DEV_BUYER_TOKEN_SECRET && (production || !devDefault))
        problem('is the published development secret: refused with NODE_ENV=production');
      else if (s.secret.length < BUYER_TOKEN_SECRET_MIN_LENGTH && (production || !devDefault))
        problem(`must have ${BUYER_TOKEN_SECRET_MIN_LENGTH}+ characters with NODE_ENV=production`);
    })
    .transform((s) => ({
      secret: s.secret ?? (devDefault && runtime.nodeEnv !== 'production' ? DEV_BUYER_TOKEN_SECRET : undefined),
    }));
