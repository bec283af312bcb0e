// The shop console's admin fields (docs/console.md): stock split by reservation state, open holds and payments, the
// marketplace listings' health, this process's per-second sale series, and a push retry. Every field needs an admin key.
import { builder } from './builder.js';
import { UserError } from './common.js';
import * as r from '../resolvers/console.js';
import type { IncidentView, ListingHealth, OpenOrder, SaleSecond, StockLevel } from '../orders/shop-console.js';

const StockComponent = builder.objectRef<{ sku: string; quantity: number }>('StockComponent').implement({
  fields: (t) => ({ sku: t.exposeString('sku'), quantity: t.exposeInt('quantity') }),
});

const StockLevelType = builder.objectRef<StockLevel>('StockLevel').implement({
  description: "One SKU's units as the shop sees them: available + held + awaitingPayment are the unsold ones.",
  fields: (t) => ({
    sku: t.exposeString('sku'),
    name: t.exposeString('name'),
    available: t.exposeInt('available', { description: 'Units a new order can claim now (a bundle: its minimum).' }),
    held: t.exposeInt('held', { description: 'Units in unpaid holds (RESERVED orders).' }),
    awaitingPayment: t.exposeInt('awaitingPayment', {
      description: 'Units whose payment the processor has not decided.',
    }),
    sold: t.exposeInt('sold'),
    purchaseLimit: t.exposeInt('purchaseLimit', { nullable: true, description: 'Per customer; null: no limit.' }),
    version: t.exposeInt('version', {
      description: "Grows on every change of the SKU's stock (as Availability.version).",
    }),
    components: t.field({
      type: [StockComponent],
      nullable: true,
      description: 'A bundle: what one bundle takes of each component; null for a plain product.',
      resolve: (s) => (s.isBundle ? s.components : null),
    }),
  }),
});

const OpenOrderLine = builder.objectRef<{ sku: string; quantity: number }>('OpenOrderLine').implement({
  fields: (t) => ({ sku: t.exposeString('sku'), quantity: t.exposeInt('quantity') }),
});

const OpenOrderType = builder.objectRef<OpenOrder>('OpenOrder').implement({
  description: 'An order whose units are held or wait on the processor.',
  fields: (t) => ({
    orderId: t.exposeID('orderId'),
    status: t.exposeString('status', { description: 'RESERVED or AWAITING_PAYMENT.' }),
    customerId: t.exposeID('customerId'),
    lines: t.field({ type: [OpenOrderLine], resolve: (o) => o.lines }),
    createdAt: t.field({ type: 'DateTime', resolve: (o) => o.createdAt }),
    expiresAt: t.field({
      type: 'DateTime',
      description: 'When an unpaid hold is released.',
      resolve: (o) => o.expiresAt,
    }),
    paymentState: t.exposeString('paymentState', { nullable: true, description: "The latest attempt's state." }),
    paymentRequestedAt: t.field({
      type: 'DateTime',
      nullable: true,
      description: 'When the processor was asked: the payment age starts here.',
      resolve: (o) => o.paymentRequestedAt,
    }),
    paymentDeadlineAt: t.field({
      type: 'DateTime',
      nullable: true,
      description: 'When the reconciler asks the processor by identity if no answer came.',
      resolve: (o) => o.paymentDeadlineAt,
    }),
    nextCheckAt: t.field({
      type: 'DateTime',
      nullable: true,
      description: "The reconciler's next look at this payment.",
      resolve: (o) => o.nextCheckAt,
    }),
    checks: t.exposeInt('checks', { description: 'Reconciler lookups so far.' }),
    nextActionType: t.exposeString('nextActionType', {
      nullable: true,
      description: 'What the shopper must do for the processor (e.g. three_d_secure), when ACTION_REQUIRED.',
    }),
  }),
});

const OpenOrders = builder
  .objectRef<{ holds: OpenOrder[]; awaitingPayment: OpenOrder[]; reconcilerLastRunAt: Date | null }>('OpenOrders')
  .implement({
    fields: (t) => ({
      holds: t.field({
        type: [OpenOrderType],
        description: 'RESERVED orders, soonest expiry first.',
        resolve: (o) => o.holds,
      }),
      awaitingPayment: t.field({
        type: [OpenOrderType],
        description: 'AWAITING_PAYMENT orders, soonest deadline first.',
        resolve: (o) => o.awaitingPayment,
      }),
      reconcilerLastRunAt: t.field({
        type: 'DateTime',
        nullable: true,
        description:
          "When this server's reconciler last finished a pass; null before its first or when it runs elsewhere.",
        resolve: (o) => o.reconcilerLastRunAt,
      }),
    }),
  });

const ListingHealthType = builder.objectRef<ListingHealth>('ListingHealth').implement({
  description: 'A channel listing of a SKU: what the marketplace lists against what it should, and how pushing goes.',
  fields: (t) => ({
    channelId: t.exposeID('channelId'),
    channelName: t.exposeString('channelName'),
    sku: t.exposeString('sku'),
    listed: t.exposeInt('listed', {
      nullable: true,
      description: 'Last acknowledged by the marketplace; null: never.',
    }),
    shouldList: t.exposeInt('shouldList', { description: "The channel's rules applied to available now." }),
    pending: t.exposeBoolean('pending', { description: 'A newer quantity is still to be sent.' }),
    desiredAt: t.field({
      type: 'DateTime',
      description: 'When the change that asked for shouldList happened: push lag runs from here while pending.',
      resolve: (l) => l.desiredAt,
    }),
    pushedAt: t.field({ type: 'DateTime', nullable: true, resolve: (l) => l.pushedAt }),
    attempts: t.exposeInt('attempts', { description: 'Failed attempts since the last success.' }),
    nextAttemptAt: t.field({ type: 'DateTime', resolve: (l) => l.nextAttemptAt }),
    lastError: t.exposeString('lastError', { nullable: true }),
  }),
});

const ChannelIncident = builder.objectRef<IncidentView>('ChannelIncident').implement({
  description: 'A marketplace order the stock could not cover, and where its cancellation is.',
  fields: (t) => ({
    channelId: t.exposeID('channelId'),
    externalOrderId: t.exposeString('externalOrderId'),
    sku: t.exposeString('sku'),
    cancelState: t.exposeString('cancelState', { description: 'PENDING until the marketplace acknowledged it, DONE.' }),
    cancelAttempts: t.exposeInt('cancelAttempts'),
    lastError: t.exposeString('lastError', { nullable: true }),
    createdAt: t.field({ type: 'DateTime', resolve: (i) => i.createdAt }),
    cancelledAt: t.field({ type: 'DateTime', nullable: true, resolve: (i) => i.cancelledAt }),
  }),
});

const ChannelHealth = builder
  .objectRef<{ listings: ListingHealth[]; incidents: IncidentView[] }>('ChannelHealth')
  .implement({
    fields: (t) => ({
      listings: t.field({ type: [ListingHealthType], resolve: (h) => h.listings }),
      incidents: t.field({ type: [ChannelIncident], description: 'Newest first.', resolve: (h) => h.incidents }),
    }),
  });

const SaleSecondType = builder.objectRef<SaleSecond>('SaleSecond').implement({
  description: "One second of this server's placeOrder answers and outbox deliveries (its own counters).",
  fields: (t) => ({
    at: t.field({ type: 'DateTime', resolve: (s) => s.at }),
    claims: t.exposeInt('claims', { description: 'placeOrder answers (replays not counted).' }),
    holds: t.exposeInt('holds', { description: 'Of them, orders that claimed units.' }),
    refusals: t.exposeInt('refusals', { description: 'Of them, refused (sold out, limits, bad input).' }),
    deliveryLagMs: t.exposeFloat('deliveryLagMs', {
      nullable: true,
      description: 'Mean commit-to-delivery lag of live events relayed that second; null: none.',
    }),
  }),
});

const RetryChannelPushInput = builder.inputType('RetryChannelPushInput', {
  fields: (t) => ({ channelId: t.id({ required: true }), sku: t.string({ required: true }) }),
});
const RetryChannelPushPayload = builder
  .objectRef<Awaited<ReturnType<typeof r.retryChannelPush>>>('RetryChannelPushPayload')
  .implement({
    fields: (t) => ({
      listing: t.field({ type: ListingHealthType, nullable: true, resolve: (p) => p.listing }),
      userErrors: t.field({ type: [UserError], resolve: (p) => p.userErrors }),
    }),
  });

builder.queryFields((t) => ({
  stockLevels: t.field({
    type: [StockLevelType],
    description:
      'Admin: every SKU (or those asked) in SKU order with held, awaiting payment and sold. `first`: 1-500 (200).',
    args: { first: t.arg.int({ required: false }), skus: t.arg.stringList({ required: false }) },
    resolve: (_root, args, ctx) => r.stockLevels(ctx, args),
  }),
  openOrders: t.field({
    type: OpenOrders,
    description:
      "Admin: active holds and orders awaiting the processor, and the reconciler's last pass. `first`: 1-500 (100) of each.",
    args: { first: t.arg.int({ required: false }) },
    resolve: (_root, args, ctx) => r.openOrders(ctx, args),
  }),
  channelHealth: t.field({
    type: ChannelHealth,
    description: 'Admin: every marketplace listing (pending and failing first) and the newest oversell incidents.',
    args: { first: t.arg.int({ required: false }) },
    resolve: (_root, args, ctx) => r.channelHealth(ctx, args),
  }),
  saleActivity: t.field({
    type: [SaleSecondType],
    description:
      "Admin: this server's last `seconds` (1-900, default 900) of claims, refusals, holds and delivery lag.",
    args: { seconds: t.arg.int({ required: false }) },
    resolve: (_root, args, ctx) => r.saleActivity(ctx, args),
  }),
}));

builder.mutationFields((t) => ({
  retryChannelPush: t.field({
    type: RetryChannelPushPayload,
    description: "Admin: send a pending listing to its marketplace now, forgetting the failed attempts' backoff.",
    args: { input: t.arg({ type: RetryChannelPushInput, required: true }) },
    resolve: (_root, { input }, ctx) => r.retryChannelPush(ctx, { channelId: String(input.channelId), sku: input.sku }),
  }),
}));
