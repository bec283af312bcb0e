// Marketplaces as sales channels (docs/channels.md): the admin operations, and the marketplace order webhook.
import * as store from '../db/channels-store.js';
import type { Channel, ChannelKind, Listing, Oversell } from '../db/channels-store.js';
import type { Db } from '../db/pool.js';
import type { Metrics } from '../common/metrics.js';
import type { AfterCommit } from '../common/after-commit.js';
import { ChannelPayloadError, ChannelSignatureError, readDelivery } from '../channels/inbound.js';
import { failed, type Result } from './errors.js';
import type { OrderRecord } from './orders.js';
import { invalidInputMessage } from '../common/invalid-input.js';

export type { Channel, ChannelKind, Listing, Oversell };

const ID = /^[a-z0-9][a-z0-9_-]{0,62}$/;
const MAX = 1_000_000_000;
export const MAX_LISTING_SKUS = 100;

export type ChannelInput = {
  id: string;
  name: string;
  kind: ChannelKind;
  endpoint: string;
  buffer?: number | null;
  maxListed?: number | null;
  percent?: number | null;
  zeroAtOrBelow?: number | null;
  maxPushesPerSecond?: number | null;
  /** the marketplace's own signing secret (Shopify signs webhooks with the app's client secret); absent: one is generated */
  webhookSecret?: string | null;
};
export type ChannelPatch = { id: string; name?: string | null; endpoint?: string | null } & Partial<
  Pick<ChannelInput, 'buffer' | 'maxListed' | 'percent' | 'zeroAtOrBelow' | 'maxPushesPerSecond'>
>;

/** Why a rule is refused (null when all are fine), with the field at fault. */
function badRules(
  c: Omit<Partial<ChannelInput>, 'name' | 'endpoint'> & { name?: string | null; endpoint?: string | null },
): [string, string] | null {
  const intIn = (v: number | null | undefined, lo: number, hi: number) =>
    v == null || (Number.isInteger(v) && v >= lo && v <= hi);
  if (!intIn(c.buffer, 0, MAX)) return ['buffer', `buffer must be between 0 and ${MAX}`];
  if (!intIn(c.maxListed, 0, MAX))
    return ['maxListed', `maxListed must be between 0 and ${MAX}, or null for no maximum`];
  if (!intIn(c.percent, 0, 100)) return ['percent', 'percent must be between 0 and 100'];
  if (!intIn(c.zeroAtOrBelow, 0, MAX)) return ['zeroAtOrBelow', `zeroAtOrBelow must be between 0 and ${MAX}`];
  if (!intIn(c.maxPushesPerSecond, 1, 1000))
    return ['maxPushesPerSecond', 'maxPushesPerSecond must be between 1 and 1000'];
  if (c.name !== undefined && c.name !== null && (c.name.trim().length < 1 || c.name.trim().length > 200))
    return ['name', 'name must be 1 to 200 characters'];
  if (c.endpoint !== undefined && c.endpoint !== null) {
    try {
      const u = new URL(c.endpoint);
      if (u.protocol !== 'https:' && u.protocol !== 'http:') throw new Error();
    } catch {
      return ['endpoint', 'endpoint must be an http(s):// URL'];
    }
  }
  return null;
}

/** The admin side of channels: create, change and read them, with their listings and oversells. */
export function createChannels({ db }: { db: Db }) {
  return {
    /** Creates a channel; its webhook secret is in this answer and nowhere else, ever. */
    async createChannel(input: ChannelInput): Promise<Result<{ channel: Channel; webhookSecret: string }>> {
      if (!ID.test(input.id))
        return failed('INVALID_INPUT', 'id must be 1-63 lower-case letters, digits, dash or underscore', ['id']);
      const bad = badRules(input);
      if (bad) return failed('INVALID_INPUT', bad[1], [bad[0]]);
      const random = crypto.getRandomValues(new Uint8Array(24)); // Web Crypto: this file is in the worker bundle too
      if (input.webhookSecret != null && (input.webhookSecret.length < 16 || input.webhookSecret.length > 512))
        return failed('INVALID_INPUT', 'webhookSecret must be 16 to 512 characters', ['webhookSecret']);
      const webhookSecret =
        input.webhookSecret ??
        `chsec_${btoa(String.fromCharCode(...random))
          .replace(/\+/g, '-')
          .replace(/\//g, '_')
          .replace(/=+$/, '')}`;
      const channel = await store.insertChannel(db, {
        id: input.id,
        name: input.name.trim(),
        kind: input.kind,
        endpoint: input.endpoint.replace(/\/+$/, ''),
        webhookSecret,
        buffer: input.buffer ?? 0,
        maxListed: input.maxListed ?? null,
        percent: input.percent ?? 100,
        zeroAtOrBelow: input.zeroAtOrBelow ?? 0,
        maxPushesPerSecond: input.maxPushesPerSecond ?? 5,
      });
      if (!channel) return failed('INVALID_INPUT', `a channel with id ${input.id} already exists`, ['id']);
      return { ok: true, value: { channel, webhookSecret } };
    },

    /** Changes name, endpoint or rules (absent fields stay; maxListed: null removes the maximum); listings follow at once. */
    async updateChannel(input: ChannelPatch): Promise<Result<Channel>> {
      const bad = badRules(input);
      if (bad) return failed('INVALID_INPUT', bad[1], [bad[0]]);
      const patch: Parameters<typeof store.updateChannel>[2] = {};
      if (input.name != null) patch.name = input.name.trim();
      if (input.endpoint != null) patch.endpoint = input.endpoint.replace(/\/+$/, '');
      if (input.buffer != null) patch.buffer = input.buffer;
      if (input.maxListed !== undefined) patch.maxListed = input.maxListed;
      if (input.percent != null) patch.percent = input.percent;
      if (input.zeroAtOrBelow != null) patch.zeroAtOrBelow = input.zeroAtOrBelow;
      if (input.maxPushesPerSecond != null) patch.maxPushesPerSecond = input.maxPushesPerSecond;
      const channel = await store.updateChannel(db, input.id, patch);
      return channel ? { ok: true, value: channel } : failed('NOT_FOUND', `no channel ${input.id}`, ['id']);
    },

    channels: () => store.listChannels(db),
    channel: (id: string) => store.findChannel(db, id),
    listings: (channelId: string, skus: string[]) => store.findListings(db, channelId, skus),
    listingsOfSku: (sku: string) => store.listingsOfSku(db, sku),
    oversells: (channelId: string, limit = 100) => store.findOversells(db, channelId, limit),
    order: (channelId: string, externalOrderId: string): Promise<OrderRecord | null> =>
      store.findChannelOrder(db, channelId, externalOrderId),
  };
}
export type Channels = ReturnType<typeof createChannels>;

export type ChannelWebhookAnswer = {
  status: 200 | 400 | 404 | 422;
  body: { received: boolean; result?: string; error?: string };
};

/** The channel a webhook names, or null (answered 404 before the body is read). */
export const findChannelSecret = store.findChannelSecret;

/**
 * A marketplace order webhook for a known channel: verified first (a bad signature is 400, no effect), then the event id,
 * the order under (channel, external order id) and the stock by conditional writes in ONE transaction
 * (apply_channel_event): a repeated delivery, concurrent or late, and the same order under another event id answer 200
 * and change nothing. An order the stock cannot cover is recorded as a CHANNEL_OVERSOLD incident (the pusher asks the
 * marketplace to cancel it, once).
 */
export async function handleChannelWebhook(
  deps: { db: Db; metrics: Metrics; onOutboxWritten?: AfterCommit; toleranceSeconds: number; onIncident?: () => void },
  channel: store.ChannelSecret,
  rawBody: string,
  headers: Headers,
): Promise<ChannelWebhookAnswer> {
  const count = (result: string) => deps.metrics.channelWebhooks.inc({ channel: channel.id, result });
  let event: Awaited<ReturnType<typeof readDelivery>>;
  try {
    event = await readDelivery(channel.kind, channel.webhookSecret, rawBody, headers, {
      toleranceSeconds: deps.toleranceSeconds,
    });
  } catch (err) {
    if (err instanceof ChannelSignatureError) {
      count('invalid');
      return { status: 400, body: { received: false, error: err.message } };
    }
    if (err instanceof ChannelPayloadError) {
      count('unprocessable');
      return { status: 422, body: { received: false, error: err.message } };
    }
    throw err;
  }
  if ('ignored' in event) {
    count('ignored');
    return { status: 200, body: { received: true, result: 'ignored' } };
  }
  let r: Awaited<ReturnType<typeof store.applyChannelEvent>>;
  try {
    r = await store.applyChannelEvent(deps.db, { channelId: channel.id, ...event });
  } catch (err) {
    // a signed event the database cannot store (a NUL character in an id or a SKU...): 422, nothing recorded
    const refusal = invalidInputMessage(err);
    if (refusal === null) throw err;
    count('unprocessable');
    return { status: 422, body: { received: false, error: refusal } };
  }
  if (r.kind === 'unknown_sku' || r.kind === 'mixed_currency') {
    count('unprocessable');
    const error =
      r.kind === 'unknown_sku'
        ? `no product with SKU ${r.sku}`
        : 'the lines mix currencies or exceed the largest total';
    return { status: 422, body: { received: false, error } };
  }
  count(r.kind);
  if (r.kind === 'oversold') {
    deps.metrics.channelOversells.inc({ channel: channel.id });
    deps.onIncident?.();
  }
  if (r.kind === 'confirmed' || r.kind === 'cancelled') await deps.onOutboxWritten?.(r.order.lines.map((l) => l.sku));
  return { status: 200, body: { received: true, result: r.kind } };
}
