// The event feed and webhook endpoints (docs/events.md): the feed for admin and partner keys, endpoints for admins.
import { builder } from './builder.js';
import { UserError } from './common.js';
import { Order } from './order.js';
import { PageInfo } from './pages.js';
import { EVENT_TYPES, type Delivery, type StoredEvent, type WebhookEndpoint } from '../orders/events.js';
import type { Page } from '../orders/pages.js';
import * as r from '../resolvers/events.js';

export const EventType = builder.enumType('EventType', {
  description:
    'What happened (docs/events.md). A webhook body says it in lower case with a dot: ORDER_CONFIRMED is order.confirmed.',
  values: Object.fromEntries(EVENT_TYPES.map((t) => [r.enumOfType(t), { description: t }])) as Record<
    string,
    { description: string }
  >,
});

const Event = builder.objectRef<StoredEvent>('Event').implement({
  description: 'One change, written in the same transaction as the change; the same id in the feed and every webhook.',
  fields: (t) => ({
    id: t.exposeID('id', { description: 'Stable: the webhook-id of every delivery of this event.' }),
    type: t.field({ type: EventType, resolve: (e) => r.enumOfType(e.type) }),
    createdAt: t.field({ type: 'DateTime', resolve: (e) => e.createdAt }),
    sequence: t.exposeInt('sequence', { description: 'Per order (order and payment events); per SKU (stock events).' }),
    data: t.string({
      description:
        "The event's data as JSON: the order document as of the event (the Order shape), or the stock figures.",
      resolve: (e) => JSON.stringify(e.data),
    }),
    order: t.field({
      type: Order,
      nullable: true,
      description: 'The order as of the event.',
      resolve: (e) => r.orderOf(e),
    }),
  }),
});
const EventEdge = builder.objectRef<{ node: StoredEvent; cursor: string }>('EventEdge').implement({
  fields: (t) => ({ node: t.field({ type: Event, resolve: (e) => e.node }), cursor: t.exposeString('cursor', {}) }),
});
const EventConnection = builder.objectRef<Page<StoredEvent>>('EventConnection').implement({
  description: 'A page of events in commit order; keep endCursor and pass it as `after` to catch up.',
  fields: (t) => ({
    edges: t.field({ type: [EventEdge], resolve: (c) => c.edges }),
    pageInfo: t.field({ type: PageInfo, resolve: (c) => c.pageInfo }),
  }),
});

const DeliveryStatus = builder.enumType('WebhookDeliveryStatus', {
  values: {
    PENDING: { description: 'Not delivered yet: due at nextAttemptAt.' },
    DELIVERED: { description: 'The endpoint answered 2xx.' },
    FAILED: { description: 'The retry schedule is spent.' },
  } as const,
});
const WebhookDelivery = builder.objectRef<Delivery>('WebhookDelivery').implement({
  fields: (t) => ({
    eventId: t.exposeID('eventId'),
    attempt: t.exposeInt('attempt', { description: 'Attempts made so far.' }),
    status: t.field({ type: DeliveryStatus, resolve: (d) => d.status }),
    httpStatus: t.exposeInt('httpStatus', { nullable: true, description: "The last attempt's HTTP status." }),
    durationMs: t.exposeInt('durationMs', { nullable: true }),
    lastError: t.exposeString('lastError', { nullable: true }),
    nextAttemptAt: t.field({ type: 'DateTime', nullable: true, resolve: (d) => d.nextAttemptAt }),
    createdAt: t.field({ type: 'DateTime', resolve: (d) => d.createdAt }),
    deliveredAt: t.field({ type: 'DateTime', nullable: true, resolve: (d) => d.deliveredAt }),
  }),
});
const WebhookDeliveryEdge = builder.objectRef<{ node: Delivery; cursor: string }>('WebhookDeliveryEdge').implement({
  fields: (t) => ({
    node: t.field({ type: WebhookDelivery, resolve: (e) => e.node }),
    cursor: t.exposeString('cursor', {}),
  }),
});
const WebhookDeliveryConnection = builder.objectRef<Page<Delivery>>('WebhookDeliveryConnection').implement({
  description: 'Deliveries, newest first.',
  fields: (t) => ({
    edges: t.field({ type: [WebhookDeliveryEdge], resolve: (c) => c.edges }),
    pageInfo: t.field({ type: PageInfo, resolve: (c) => c.pageInfo }),
  }),
});

const WebhookEndpointType = builder.objectRef<WebhookEndpoint>('WebhookEndpoint').implement({
  description: 'Where events are pushed, signed to the Standard Webhooks specification (docs/events.md).',
  fields: (t) => ({
    id: t.exposeID('id'),
    url: t.exposeString('url'),
    description: t.exposeString('description', { nullable: true }),
    eventTypes: t.field({ type: [EventType], resolve: (e) => e.eventTypes.map(r.enumOfType) }),
    enabled: t.exposeBoolean('enabled', {
      description: `False after WEBHOOK_DISABLE_AFTER_HOURS of failures (or an admin's update); updating it to true sends the waiting deliveries.`,
    }),
    disabledAt: t.field({ type: 'DateTime', nullable: true, resolve: (e) => e.disabledAt }),
    failingSince: t.field({ type: 'DateTime', nullable: true, resolve: (e) => e.failingSince }),
    previousSecretUntil: t.field({
      type: 'DateTime',
      nullable: true,
      description: 'After a rotation the previous secret signs too until then.',
      resolve: (e) => e.previousSecretUntil,
    }),
    createdAt: t.field({ type: 'DateTime', resolve: (e) => e.createdAt }),
    deliveries: t.field({
      type: WebhookDeliveryConnection,
      args: { first: t.arg.int({ required: false }), after: t.arg.string({ required: false }) },
      resolve: (e, args, ctx) => r.deliveries(ctx, e, args),
    }),
  }),
});

const CreateInput = builder.inputType('CreateWebhookEndpointInput', {
  fields: (t) => ({
    url: t.string({
      required: true,
      description: 'https:// (http:// and private addresses only with WEBHOOK_ALLOW_PRIVATE_URLS=true).',
    }),
    eventTypes: t.field({ type: [EventType], required: true }),
    description: t.string({ required: false }),
  }),
});
const UpdateInput = builder.inputType('UpdateWebhookEndpointInput', {
  description: 'Absent fields stay as they are.',
  fields: (t) => ({
    id: t.id({ required: true }),
    url: t.string({ required: false }),
    eventTypes: t.field({ type: [EventType], required: false }),
    description: t.string({ required: false }),
    enabled: t.boolean({ required: false }),
  }),
});
const IdInput = (name: string) => builder.inputType(name, { fields: (t) => ({ id: t.id({ required: true }) }) });
const DeleteInput = IdInput('DeleteWebhookEndpointInput');
const RotateInput = IdInput('RotateWebhookEndpointSecretInput');
const RedeliverInput = builder.inputType('RedeliverEventInput', {
  fields: (t) => ({ endpointId: t.id({ required: true }), eventId: t.id({ required: true }) }),
});

const WithSecretPayload = (name: string) =>
  builder
    .objectRef<{ endpoint: WebhookEndpoint | null; secret: string | null; userErrors: r.UserErrors }>(name)
    .implement({
      fields: (t) => ({
        endpoint: t.field({ type: WebhookEndpointType, nullable: true, resolve: (p) => p.endpoint }),
        secret: t.exposeString('secret', {
          nullable: true,
          description: 'The signing secret (whsec_...). Shown here once, never again: store it now.',
        }),
        userErrors: t.field({ type: [UserError], resolve: (p) => p.userErrors }),
      }),
    });
const CreatePayload = WithSecretPayload('CreateWebhookEndpointPayload');
const RotatePayload = WithSecretPayload('RotateWebhookEndpointSecretPayload');
const UpdatePayload = builder
  .objectRef<{ endpoint: WebhookEndpoint | null; userErrors: r.UserErrors }>('UpdateWebhookEndpointPayload')
  .implement({
    fields: (t) => ({
      endpoint: t.field({ type: WebhookEndpointType, nullable: true, resolve: (p) => p.endpoint }),
      userErrors: t.field({ type: [UserError], resolve: (p) => p.userErrors }),
    }),
  });
const DeletePayload = builder
  .objectRef<{ deletedId: string | null; userErrors: r.UserErrors }>('DeleteWebhookEndpointPayload')
  .implement({
    fields: (t) => ({
      deletedId: t.exposeID('deletedId', { nullable: true }),
      userErrors: t.field({ type: [UserError], resolve: (p) => p.userErrors }),
    }),
  });
const RedeliverPayload = builder
  .objectRef<{ delivery: Delivery | null; userErrors: r.UserErrors }>('RedeliverEventPayload')
  .implement({
    fields: (t) => ({
      delivery: t.field({ type: WebhookDelivery, nullable: true, resolve: (p) => p.delivery }),
      userErrors: t.field({ type: [UserError], resolve: (p) => p.userErrors }),
    }),
  });

builder.queryFields((t) => ({
  events: t.field({
    type: EventConnection,
    description:
      "Events in commit order (admin: every event; partner: its own client's orders'). `first`: 1 to 500 (default 100).",
    args: {
      after: t.arg.string({ required: false }),
      first: t.arg.int({ required: false }),
      types: t.arg({ type: [EventType], required: false }),
    },
    resolve: (_root, args, ctx) => r.events(ctx, args),
  }),
  webhookEndpoints: t.field({
    type: [WebhookEndpointType],
    description: 'Admin: every webhook endpoint.',
    resolve: (_root, _args, ctx) => r.webhookEndpoints(ctx),
  }),
  webhookEndpoint: t.field({
    type: WebhookEndpointType,
    nullable: true,
    description: 'Admin: one webhook endpoint with its deliveries; null for an unknown id.',
    args: { id: t.arg.id({ required: true }) },
    resolve: (_root, args, ctx) => r.webhookEndpoint(ctx, String(args.id)),
  }),
}));

builder.mutationFields((t) => ({
  createWebhookEndpoint: t.field({
    description:
      'Admin: an endpoint that receives the events it names, signed (Standard Webhooks); the secret is answered once.',
    type: CreatePayload,
    args: { input: t.arg({ type: CreateInput, required: true }) },
    resolve: (_root, { input }, ctx) => r.createWebhookEndpoint(ctx, input),
  }),
  updateWebhookEndpoint: t.field({
    description: "Admin: change an endpoint's URL, event types, description or enabled flag.",
    type: UpdatePayload,
    args: { input: t.arg({ type: UpdateInput, required: true }) },
    resolve: (_root, { input }, ctx) => r.updateWebhookEndpoint(ctx, { ...input, id: String(input.id) }),
  }),
  deleteWebhookEndpoint: t.field({
    description: 'Admin: delete an endpoint and its deliveries.',
    type: DeletePayload,
    args: { input: t.arg({ type: DeleteInput, required: true }) },
    resolve: (_root, { input }, ctx) => r.deleteWebhookEndpoint(ctx, { id: String(input.id) }),
  }),
  rotateWebhookEndpointSecret: t.field({
    description:
      'Admin: a new signing secret (answered once); the old one signs beside it for WEBHOOK_SECRET_OVERLAP_HOURS.',
    type: RotatePayload,
    args: { input: t.arg({ type: RotateInput, required: true }) },
    resolve: (_root, { input }, ctx) => r.rotateWebhookEndpointSecret(ctx, { id: String(input.id) }),
  }),
  redeliverEvent: t.field({
    description: 'Admin: send one event to one endpoint again (the same webhook-id).',
    type: RedeliverPayload,
    args: { input: t.arg({ type: RedeliverInput, required: true }) },
    resolve: (_root, { input }, ctx) =>
      r.redeliverEvent(ctx, { endpointId: String(input.endpointId), eventId: String(input.eventId) }),
  }),
}));
