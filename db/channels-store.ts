// Marketplace channels: their rules, the coalesced push outbox (channel_listings), marketplace order events and the
// oversell incidents (db/migrations/0030_channels.sql, db/functions/090_channels.sql).
import { z } from 'zod';
import type { Db } from './pool.js';
import { parseRow, parseRows } from './rows.js';
import { Order, type OrderRecord } from './order-document.js';

const CHANNEL_KINDS = ['SANDBOX', 'SHOPIFY'] as const;
export type ChannelKind = (typeof CHANNEL_KINDS)[number];
export type ChannelRules = {
  buffer: number;
  maxListed: number | null;
  percent: number;
  zeroAtOrBelow: number;
  maxPushesPerSecond: number;
};
export type Channel = {
  id: string;
  name: string;
  kind: ChannelKind;
  endpoint: string;
  createdAt: Date;
  updatedAt: Date;
} & ChannelRules;
/** What the webhook route needs to verify a delivery. */
export type ChannelSecret = { id: string; kind: ChannelKind; webhookSecret: string };

const COLUMNS = `id, name, kind, endpoint, buffer, max_listed, percent, zero_at_or_below, max_pushes_per_second, created_at, updated_at`;
const ChannelRow = z.object({
  id: z.string(),
  name: z.string(),
  kind: z.enum(CHANNEL_KINDS),
  endpoint: z.string(),
  buffer: z.number(),
  max_listed: z.number().nullable(),
  percent: z.number(),
  zero_at_or_below: z.number(),
  max_pushes_per_second: z.number(),
  created_at: z.date(),
  updated_at: z.date(),
});
const toChannel = (r: z.infer<typeof ChannelRow>): Channel => ({
  id: r.id,
  name: r.name,
  kind: r.kind,
  endpoint: r.endpoint,
  buffer: r.buffer,
  maxListed: r.max_listed,
  percent: r.percent,
  zeroAtOrBelow: r.zero_at_or_below,
  maxPushesPerSecond: r.max_pushes_per_second,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

/**
 * Inserts a channel and computes its listings for every SKU, in one transaction (the first channel flags bucketed SKUs'
 * buckets before it, in one of their own: follow_unlisted_buckets); null when the id is taken.
 */
export async function insertChannel(
  db: Db,
  c: { id: string; name: string; kind: ChannelKind; endpoint: string; webhookSecret: string } & ChannelRules,
): Promise<Channel | null> {
  // the first channel: bucketed SKUs' buckets followed first, outside the transaction below (follow_unlisted_buckets)
  await db.run('SELECT follow_unlisted_buckets()');
  return db.transaction(async (tx) => {
    const { rows } = await tx.query(
      `INSERT INTO channels (id, name, kind, endpoint, buffer, max_listed, percent, zero_at_or_below, max_pushes_per_second, webhook_secret)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) ON CONFLICT (id) DO NOTHING RETURNING ${COLUMNS}`,
      [
        c.id,
        c.name,
        c.kind,
        c.endpoint,
        c.buffer,
        c.maxListed,
        c.percent,
        c.zeroAtOrBelow,
        c.maxPushesPerSecond,
        c.webhookSecret,
      ],
    );
    if (!rows[0]) return null;
    await tx.query('SELECT flag_inventory_listed()'); // the first channel: every row's changes are followed from now on
    await tx.query('SELECT recompute_channel_listings(p_channel => $1)', [c.id]);
    return toChannel(parseRow(ChannelRow, rows[0], 'the new channel'));
  });
}

/** Changes a channel's name, endpoint or rules and recomputes its listings, in one transaction; null for an unknown id. */
export async function updateChannel(
  db: Db,
  id: string,
  patch: Partial<{ name: string; endpoint: string } & ChannelRules>,
): Promise<Channel | null> {
  return db.transaction(async (tx) => {
    const { rows } = await tx.query(
      `UPDATE channels SET name = coalesce($2, name), endpoint = coalesce($3, endpoint), buffer = coalesce($4, buffer),
              max_listed = CASE WHEN $5::boolean THEN $6 ELSE max_listed END, percent = coalesce($7, percent),
              zero_at_or_below = coalesce($8, zero_at_or_below), max_pushes_per_second = coalesce($9, max_pushes_per_second),
              updated_at = now()
        WHERE id = $1 RETURNING ${COLUMNS}`,
      [
        id,
        patch.name ?? null,
        patch.endpoint ?? null,
        patch.buffer ?? null,
        'maxListed' in patch,
        patch.maxListed ?? null,
        patch.percent ?? null,
        patch.zeroAtOrBelow ?? null,
        patch.maxPushesPerSecond ?? null,
      ],
    );
    if (!rows[0]) return null;
    await tx.query('SELECT recompute_channel_listings(p_channel => $1)', [id]);
    return toChannel(parseRow(ChannelRow, rows[0], 'the changed channel'));
  });
}

/**
 * Every listing of the channel to be sent again, at its current desired version (the marketplace forgot them: a
 * restarted in-process sandbox). The desired versions stay as they are, so a later stock change still supersedes them.
 */
export async function repushListings(db: Db, channelId: string): Promise<number> {
  const r = await db.run(
    `UPDATE channel_listings
        SET pushed_version = least(pushed_version, desired_version - 1), pushed_quantity = NULL, pushed_at = NULL,
            desired_at = clock_timestamp(), next_attempt_at = clock_timestamp(), attempts = 0, lease_until = NULL, last_error = NULL
      WHERE channel_id = $1`,
    [channelId],
  );
  return r.rowCount ?? 0;
}

export async function listChannels(db: Db): Promise<Channel[]> {
  const { rows } = await db.query(`SELECT ${COLUMNS} FROM channels ORDER BY id`);
  return parseRows(ChannelRow, rows, 'the channels').map(toChannel);
}

export async function findChannel(db: Db, id: string): Promise<Channel | null> {
  const { rows } = await db.query(`SELECT ${COLUMNS} FROM channels WHERE id = $1`, [id]);
  return rows[0] ? toChannel(parseRow(ChannelRow, rows[0], 'the channel')) : null;
}

const SecretRow = z.object({ id: z.string(), kind: z.enum(CHANNEL_KINDS), webhook_secret: z.string() });
const toChannelSecret = (r: z.infer<typeof SecretRow>): ChannelSecret => ({
  id: r.id,
  kind: r.kind,
  webhookSecret: r.webhook_secret,
});

export async function findChannelSecret(db: Db, id: string): Promise<ChannelSecret | null> {
  const { rows } = await db.query(`SELECT id, kind, webhook_secret FROM channels WHERE id = $1`, [id]);
  return rows[0] ? toChannelSecret(parseRow(SecretRow, rows[0], "the channel's secret")) : null;
}

export type Listing = {
  channelId: string;
  sku: string;
  desiredQuantity: number;
  pushedQuantity: number | null;
  pushedAt: Date | null;
  pending: boolean;
};
const ListingRow = z.object({
  channel_id: z.string(),
  sku: z.string(),
  desired_quantity: z.number(),
  pushed_quantity: z.number().nullable(),
  pushed_at: z.date().nullable(),
  pending: z.boolean(),
});
const toListing = (r: z.infer<typeof ListingRow>): Listing => ({
  channelId: r.channel_id,
  sku: r.sku,
  desiredQuantity: r.desired_quantity,
  pushedQuantity: r.pushed_quantity,
  pushedAt: r.pushed_at,
  pending: r.pending,
});
const LISTING_COLUMNS = `l.channel_id, l.sku, l.desired_quantity, l.pushed_quantity, l.pushed_at, l.desired_version > l.pushed_version AS pending`;

/** A channel's listings of these SKUs, in the order asked; null where the channel lists no such SKU. */
export async function findListings(db: Db, channelId: string, skus: string[]): Promise<(Listing | null)[]> {
  const { rows } = await db.query(
    `SELECT ${LISTING_COLUMNS} FROM channel_listings l WHERE l.channel_id = $1 AND l.sku = ANY ($2::text[])`,
    [channelId, skus],
  );
  const bySku = new Map(parseRows(ListingRow, rows, "the channel's listings").map((r) => [r.sku, toListing(r)]));
  return skus.map((s) => bySku.get(s) ?? null);
}

const NamedListingRow = ListingRow.extend({ name: z.string() });

/** Every channel's listing of one SKU (the live page). */
export async function listingsOfSku(db: Db, sku: string): Promise<(Listing & { channelName: string })[]> {
  const { rows } = await db.query(
    `SELECT ${LISTING_COLUMNS}, c.name
       FROM channel_listings l JOIN channels c ON c.id = l.channel_id WHERE l.sku = $1 ORDER BY l.channel_id`,
    [sku],
  );
  return parseRows(NamedListingRow, rows, "the SKU's listings").map((r) => ({ ...toListing(r), channelName: r.name }));
}

export type Oversell = {
  id: number;
  externalOrderId: string;
  orderId: string;
  sku: string;
  cancelRequested: boolean;
  createdAt: Date;
};
const OversellRow = z.object({
  id: z.number(),
  external_order_id: z.string(),
  order_id: z.string(),
  sku: z.string(),
  cancel_requested: z.boolean(),
  created_at: z.date(),
});
const toOversell = (r: z.infer<typeof OversellRow>): Oversell => ({
  id: r.id,
  externalOrderId: r.external_order_id,
  orderId: r.order_id,
  sku: r.sku,
  cancelRequested: r.cancel_requested,
  createdAt: r.created_at,
});

/** A channel's oversell incidents, newest first. */
export async function findOversells(db: Db, channelId: string, limit: number): Promise<Oversell[]> {
  const { rows } = await db.query(
    `SELECT id, external_order_id, order_id, sku, cancel_state = 'DONE' AS cancel_requested, created_at
       FROM channel_incidents WHERE channel_id = $1 AND kind = 'CHANNEL_OVERSOLD' ORDER BY id DESC LIMIT $2`,
    [channelId, limit],
  );
  return parseRows(OversellRow, rows, "the channel's oversells").map(toOversell);
}

/** One of the channel's orders by the marketplace's order id. */
export async function findChannelOrder(
  db: Db,
  channelId: string,
  externalOrderId: string,
): Promise<OrderRecord | null> {
  const { rows } = await db.query(
    `SELECT order_json(p_order_id => id) AS j FROM orders WHERE channel_id = $1 AND external_order_id = $2`,
    [channelId, externalOrderId],
  );
  return rows[0] ? parseRow(z.object({ j: Order }), rows[0], 'order_json()').j : null;
}

/** What apply_channel_event() answers (db/functions/090_channels.sql). */
const ChannelEventAnswer = z.discriminatedUnion('kind', [
  z.object({ kind: z.enum(['confirmed', 'cancelled', 'noop']), order: Order }),
  z.object({ kind: z.literal('oversold'), order: Order, sku: z.string() }),
  z.object({ kind: z.enum(['duplicate', 'duplicate_order', 'cancelled_before_created', 'mixed_currency']) }),
  z.object({ kind: z.literal('unknown_sku'), sku: z.string() }),
]);
export type ChannelEventRow = z.infer<typeof ChannelEventAnswer>;

/** A marketplace order event in one transaction (apply_channel_event, db/functions/090_channels.sql). */
export async function applyChannelEvent(
  db: Db,
  e: {
    channelId: string;
    eventId: string;
    type: 'order.created' | 'order.cancelled';
    externalOrderId: string;
    customer: string;
    lines: { sku: string; quantity: number }[];
  },
): Promise<ChannelEventRow> {
  // one statement; repeating it after a lost connection is safe: the event id makes the repeat a duplicate (I8)
  const { rows } = await db.run(
    `SELECT apply_channel_event(p_channel => $1, p_event_id => $2, p_type => $3, p_external => $4, p_customer => $5,
                                p_lines => $6::jsonb) AS r`,
    [e.channelId, e.eventId, e.type, e.externalOrderId, e.customer, JSON.stringify(e.lines)],
  );
  return parseRow(ChannelEventAnswer, rows[0]?.r, 'apply_channel_event()');
}

// ---- the pusher's side (orders/channel-pusher.ts): outside any transaction but these short ones

export type PushJob = {
  channelId: string;
  sku: string;
  quantity: number;
  version: number;
  previous: number | null;
  desiredAt: Date;
  attempts: number;
};
const PushRow = z.object({
  sku: z.string(),
  desired_quantity: z.number(),
  desired_version: z.number(),
  pushed_quantity: z.number().nullable(),
  desired_at: z.date(),
  attempts: z.number(),
});
const toPushJob = (channelId: string, r: z.infer<typeof PushRow>): PushJob => ({
  channelId,
  sku: r.sku,
  quantity: r.desired_quantity,
  version: r.desired_version,
  previous: r.pushed_quantity,
  desiredAt: r.desired_at,
  attempts: r.attempts,
});

/**
 * Leases up to `limit` listings of one channel that are due to be sent: decreases (and zeros) before increases, then
 * oldest change first. The lease (FOR UPDATE SKIP LOCKED, then lease_until) keeps two pushers off one row.
 */
export async function leasePushes(db: Db, channelId: string, limit: number, leaseSeconds: number): Promise<PushJob[]> {
  const { rows } = await db.run(
    `WITH due AS (
       SELECT channel_id, sku FROM channel_listings
        WHERE channel_id = $1 AND desired_version > pushed_version AND next_attempt_at <= now()
          AND (lease_until IS NULL OR lease_until < now())
        ORDER BY (desired_quantity < coalesce(pushed_quantity, 2147483647)) DESC, desired_at, sku
        LIMIT $2 FOR UPDATE SKIP LOCKED)
     UPDATE channel_listings l SET lease_until = now() + make_interval(secs => $3)
       FROM due WHERE l.channel_id = due.channel_id AND l.sku = due.sku
     RETURNING l.sku, l.desired_quantity, l.desired_version, l.pushed_quantity, l.desired_at, l.attempts`,
    [channelId, limit, leaseSeconds],
  );
  return parseRows(PushRow, rows, 'the leased pushes')
    .map((r) => toPushJob(channelId, r))
    .sort(
      (a, b) =>
        Number(b.quantity < (b.previous ?? Infinity)) - Number(a.quantity < (a.previous ?? Infinity)) ||
        a.desiredAt.getTime() - b.desiredAt.getTime(),
    );
}

/** The marketplace acknowledged `version` (or has a newer one): recorded only if nothing newer was (never backwards); the lease ends either way. */
export async function markPushed(
  db: Db,
  j: { channelId: string; sku: string; quantity: number; version: number },
): Promise<void> {
  await db.run(
    `UPDATE channel_listings
        SET pushed_quantity = CASE WHEN pushed_version < $4 THEN $3 ELSE pushed_quantity END,
            pushed_at = CASE WHEN pushed_version < $4 THEN now() ELSE pushed_at END,
            pushed_version = greatest(pushed_version, $4), attempts = 0, lease_until = NULL, last_error = NULL
      WHERE channel_id = $1 AND sku = $2`,
    [j.channelId, j.sku, j.quantity, j.version],
  );
}

/** A failed push: tried again after `delayMs` (the caller's jittered backoff, or the marketplace's Retry-After). */
export async function markPushFailed(
  db: Db,
  j: { channelId: string; sku: string },
  delayMs: number,
  error: string,
  countAttempt = true,
): Promise<void> {
  await db.run(
    `UPDATE channel_listings SET attempts = attempts + $5::int, next_attempt_at = now() + make_interval(secs => $3 / 1000.0),
            lease_until = NULL, last_error = left($4, 500)
      WHERE channel_id = $1 AND sku = $2`,
    [j.channelId, j.sku, delayMs, error, countAttempt ? 1 : 0],
  );
}

export type CancelJob = { id: number; channelId: string; externalOrderId: string; attempts: number };
const CancelRow = z.object({
  id: z.number(),
  channel_id: z.string(),
  external_order_id: z.string(),
  cancel_attempts: z.number(),
});
const toCancelJob = (r: z.infer<typeof CancelRow>): CancelJob => ({
  id: r.id,
  channelId: r.channel_id,
  externalOrderId: r.external_order_id,
  attempts: r.cancel_attempts,
});

/** Leases incidents (an oversell, an admin's cancelOrder) whose cancellation is still to be asked of the marketplace. */
export async function leaseCancellations(db: Db, limit: number, leaseSeconds: number): Promise<CancelJob[]> {
  const { rows } = await db.run(
    `WITH due AS (SELECT id FROM channel_incidents WHERE cancel_state = 'PENDING' AND next_attempt_at <= now()
                   ORDER BY id LIMIT $1 FOR UPDATE SKIP LOCKED)
     UPDATE channel_incidents i SET next_attempt_at = now() + make_interval(secs => $2) FROM due WHERE i.id = due.id
     RETURNING i.id, i.channel_id, i.external_order_id, i.cancel_attempts`,
    [limit, leaseSeconds],
  );
  return parseRows(CancelRow, rows, 'the leased cancellations').map(toCancelJob);
}

export async function markCancelDone(db: Db, id: number): Promise<void> {
  await db.run(
    `UPDATE channel_incidents SET cancel_state = 'DONE', cancelled_at = now(), last_error = NULL WHERE id = $1 AND cancel_state = 'PENDING'`,
    [id],
  );
}

export async function markCancelFailed(db: Db, id: number, delayMs: number, error: string): Promise<void> {
  await db.run(
    `UPDATE channel_incidents SET cancel_attempts = cancel_attempts + 1, next_attempt_at = now() + make_interval(secs => $2 / 1000.0), last_error = left($3, 500)
      WHERE id = $1 AND cancel_state = 'PENDING'`,
    [id, delayMs, error],
  );
}

/** Bundles whose components changed: their listings recomputed from the committed components (091_bundles.sql). */
export async function recomputeBundleListings(db: Db): Promise<number> {
  const { rows } = await db.run('SELECT recompute_bundle_listings() AS n');
  return parseRow(z.object({ n: z.number() }), rows[0], 'recompute_bundle_listings()').n;
}

/** Channels with something due (the pusher's wake-up scan). */
export async function channelsWithWork(db: Db): Promise<string[]> {
  const { rows } = await db.query(
    `SELECT DISTINCT channel_id FROM channel_listings WHERE desired_version > pushed_version AND next_attempt_at <= now()`,
  );
  return parseRows(z.object({ channel_id: z.string() }), rows, 'the channels with work').map((r) => r.channel_id);
}
