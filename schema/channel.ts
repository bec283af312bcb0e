// Marketplace channels (docs/channels.md): the admin types and fields. Every field here needs an admin key.
import { builder } from './builder.js';
import { UserError } from './common.js';
import { Order } from './order.js';
import type { Channel as ChannelShape, Listing, Oversell } from '../orders/channels.js';
import * as r from '../resolvers/channels.js';

const ChannelKind = builder.enumType('ChannelKind', {
  description: 'How lastunit talks to the marketplace (docs/channels.md).',
  values: {
    SANDBOX: {
      description:
        "lastunit's own marketplace protocol (the marketplace sandbox speaks it): PUT <endpoint>/listings/<sku>.",
    },
    SHOPIFY: { description: "Shopify's webhooks (X-Shopify-Hmac-Sha256, orders/create, orders/cancelled)." },
  } as const,
});

const ChannelListing = builder.objectRef<Listing>('ChannelListing').implement({
  description: 'What a channel should list of a SKU, and what the marketplace last acknowledged.',
  fields: (t) => ({
    sku: t.exposeString('sku'),
    desiredQuantity: t.exposeInt('desiredQuantity', {
      description: "The channel's rules applied to the SKU's available units now.",
    }),
    pushedQuantity: t.exposeInt('pushedQuantity', {
      nullable: true,
      description: 'The quantity the marketplace last acknowledged; null: never pushed.',
    }),
    pushedAt: t.field({
      type: 'DateTime',
      nullable: true,
      description: 'When the marketplace acknowledged it.',
      resolve: (l) => l.pushedAt,
    }),
    pending: t.exposeBoolean('pending', { description: 'A newer desired quantity is still to be sent.' }),
  }),
});

const ChannelOversell = builder.objectRef<Oversell>('ChannelOversell').implement({
  description:
    'A marketplace order the stock could not cover (CHANNEL_OVERSOLD): nothing was taken and a cancellation was asked.',
  fields: (t) => ({
    externalOrderId: t.exposeString('externalOrderId', { description: "The marketplace's order id." }),
    sku: t.exposeString('sku', { description: 'The first SKU that was short.' }),
    cancelRequested: t.exposeBoolean('cancelRequested', {
      description: 'The marketplace acknowledged the cancellation request.',
    }),
    createdAt: t.field({ type: 'DateTime', resolve: (o) => o.createdAt }),
  }),
});

export const Channel = builder.objectRef<ChannelShape>('Channel').implement({
  description:
    'A marketplace that sells the same units (docs/channels.md). Listed quantity per SKU: available <= zeroAtOrBelow ? 0 : min(maxListed, max(0, floor(available * percent / 100) - buffer)).',
  fields: (t) => ({
    id: t.exposeID('id', { description: 'Also the last segment of its webhook URL: POST /webhooks/channels/<id>.' }),
    name: t.exposeString('name'),
    kind: t.field({ type: ChannelKind, resolve: (c) => c.kind }),
    endpoint: t.exposeString('endpoint', { description: 'Where pushes and cancellations go.' }),
    buffer: t.exposeInt('buffer', { description: 'Units held back from this channel.' }),
    maxListed: t.exposeInt('maxListed', { nullable: true, description: 'The most units listed; null: no maximum.' }),
    percent: t.exposeInt('percent', { description: 'Share of available units listed, 0-100.' }),
    zeroAtOrBelow: t.exposeInt('zeroAtOrBelow', { description: 'List 0 when available is at or below this.' }),
    maxPushesPerSecond: t.exposeInt('maxPushesPerSecond', {
      description: "The marketplace API's write rate limit, kept by the pusher.",
    }),
    listings: t.field({
      type: [ChannelListing],
      nullable: { list: false, items: true },
      description: 'Per SKU, in the order asked (null for an unknown SKU); at most 100 SKUs.',
      args: { skus: t.arg.stringList({ required: true }) },
      resolve: (c, args, ctx) => r.listings(ctx, c, args.skus),
    }),
    oversells: t.field({
      type: [ChannelOversell],
      description: 'Oversell incidents, newest first.',
      args: { last: t.arg.int({ required: false, defaultValue: 20 }) },
      resolve: (c, args, ctx) => r.oversells(ctx, c, args.last ?? 20),
    }),
    order: t.field({
      type: Order,
      nullable: true,
      description: "One of this channel's orders by the marketplace's order id.",
      args: { externalOrderId: t.arg.string({ required: true }) },
      resolve: (c, args, ctx) => r.order(ctx, c, args.externalOrderId),
    }),
    createdAt: t.field({ type: 'DateTime', resolve: (c) => c.createdAt }),
    updatedAt: t.field({ type: 'DateTime', resolve: (c) => c.updatedAt }),
  }),
});

const CreateChannelInput = builder.inputType('CreateChannelInput', {
  fields: (t) => ({
    id: t.string({ required: true, description: '1-63 lower-case letters, digits, dash or underscore.' }),
    name: t.string({ required: true }),
    kind: t.field({ type: ChannelKind, required: true }),
    endpoint: t.string({ required: true, description: 'http(s):// base URL of the marketplace API.' }),
    buffer: t.int({ required: false, description: 'Default 0.' }),
    maxListed: t.int({ required: false, description: 'Default: no maximum.' }),
    percent: t.int({ required: false, description: 'Default 100.' }),
    zeroAtOrBelow: t.int({ required: false, description: 'Default 0.' }),
    maxPushesPerSecond: t.int({ required: false, description: 'Default 5 (Amazon patchListingsItem).' }),
    webhookSecret: t.string({
      required: false,
      description:
        "The marketplace's own signing secret, when it has one (Shopify: the app's client secret); absent: lastunit generates one.",
    }),
  }),
});
const UpdateChannelInput = builder.inputType('UpdateChannelInput', {
  description: 'Absent fields stay as they are; maxListed: null removes the maximum.',
  fields: (t) => ({
    id: t.string({ required: true }),
    name: t.string({ required: false }),
    endpoint: t.string({ required: false }),
    buffer: t.int({ required: false }),
    maxListed: t.int({ required: false }),
    percent: t.int({ required: false }),
    zeroAtOrBelow: t.int({ required: false }),
    maxPushesPerSecond: t.int({ required: false }),
  }),
});
const CreateChannelPayload = builder
  .objectRef<Awaited<ReturnType<typeof r.createChannel>>>('CreateChannelPayload')
  .implement({
    fields: (t) => ({
      channel: t.field({ type: Channel, nullable: true, resolve: (p) => p.channel }),
      webhookSecret: t.exposeString('webhookSecret', {
        nullable: true,
        description: 'The key marketplace webhooks are signed with. Shown here once, never again: store it now.',
      }),
      userErrors: t.field({ type: [UserError], resolve: (p) => p.userErrors }),
    }),
  });
const UpdateChannelPayload = builder
  .objectRef<Awaited<ReturnType<typeof r.updateChannel>>>('UpdateChannelPayload')
  .implement({
    fields: (t) => ({
      channel: t.field({ type: Channel, nullable: true, resolve: (p) => p.channel }),
      userErrors: t.field({ type: [UserError], resolve: (p) => p.userErrors }),
    }),
  });

builder.queryFields((t) => ({
  channels: t.field({
    type: [Channel],
    description: 'Admin: every marketplace channel.',
    resolve: (_root, _args, ctx) => r.channels(ctx),
  }),
  channel: t.field({
    type: Channel,
    nullable: true,
    description: 'Admin: one channel by id.',
    args: { id: t.arg.id({ required: true }) },
    resolve: (_root, args, ctx) => r.channel(ctx, String(args.id)),
  }),
}));

builder.mutationFields((t) => ({
  createChannel: t.field({
    type: CreateChannelPayload,
    description:
      'Admin: add a marketplace. Its listings are computed at once; the webhook secret is returned this once.',
    args: { input: t.arg({ type: CreateChannelInput, required: true }) },
    resolve: (_root, { input }, ctx) => r.createChannel(ctx, input),
  }),
  updateChannel: t.field({
    type: UpdateChannelPayload,
    description: "Admin: change a channel's rules; its listings are recomputed in the same transaction and pushed.",
    args: { input: t.arg({ type: UpdateChannelInput, required: true }) },
    resolve: (_root, { input }, ctx) => r.updateChannel(ctx, input),
  }),
}));
