// Thin: event feed and webhook endpoint arguments -> one call into orders/events.ts -> payload (docs/events.md).
import { createGraphQLError } from 'graphql-yoga';
import type { Context } from './context.js';
import type { Result } from '../orders/errors.js';
import type { EndpointInput, EndpointPatch, StoredEvent, WebhookEndpoint } from '../orders/events.js';
import { toOrder, OrderDocument } from '../db/order-document.js';
import { requireRole } from './auth.js';
import { userErrorsOf, type UserErrorShape } from './user-errors.js';

export type UserErrors = UserErrorShape[];

function answerOf<T>(r: Result<T>): T {
  if (r.ok) return r.value;
  throw createGraphQLError(r.errors.map((e) => e.message).join('; '), {
    extensions: { code: 'BAD_USER_INPUT', http: { status: 400 } },
  });
}

/** `order.created` -> ORDER_CREATED, and back. */
export const enumOfType = (t: string) => t.replace(/[.]/g, '_').toUpperCase();
export const typeOfEnum = (e: string) => {
  const i = e.startsWith('WEBHOOK_ENDPOINT_') ? 'WEBHOOK_ENDPOINT'.length : e.indexOf('_');
  return `${e.slice(0, i)}.${e.slice(i + 1)}`.toLowerCase();
};

export async function events(
  ctx: Context,
  args: { after?: string | null; first?: number | null; types?: readonly string[] | null },
) {
  requireRole(ctx, 'Query.events');
  return answerOf(await ctx.events.feed(ctx.caller, { ...args, types: args.types?.map(typeOfEnum) ?? null }));
}

/** The order document of an order event, as the API's Order. */
export function orderOf(e: StoredEvent) {
  if (!e.orderId) return null;
  const d = OrderDocument.safeParse(e.data);
  return d.success ? toOrder(d.data) : null;
}

export async function webhookEndpoints(ctx: Context) {
  requireRole(ctx, 'Query.webhookEndpoints');
  return ctx.events.endpoints();
}

export async function webhookEndpoint(ctx: Context, id: string) {
  requireRole(ctx, 'Query.webhookEndpoint');
  return ctx.events.endpoint(id);
}

export async function deliveries(
  ctx: Context,
  e: WebhookEndpoint,
  args: { first?: number | null; after?: string | null },
) {
  return answerOf(await ctx.events.deliveries(e.id, args));
}

const typesOf = (types: readonly string[] | null | undefined) => types?.map(typeOfEnum);

export async function createWebhookEndpoint(
  ctx: Context,
  input: Omit<EndpointInput, 'eventTypes'> & { eventTypes: string[] },
) {
  requireRole(ctx, 'Mutation.createWebhookEndpoint');
  const r = await ctx.events.createEndpoint({ ...input, eventTypes: typesOf(input.eventTypes) ?? [] });
  return {
    endpoint: r.ok ? r.value.endpoint : null,
    secret: r.ok ? r.value.secret : null,
    userErrors: userErrorsOf(r),
  };
}

export async function updateWebhookEndpoint(ctx: Context, input: EndpointPatch) {
  requireRole(ctx, 'Mutation.updateWebhookEndpoint');
  const r = await ctx.events.updateEndpoint({ ...input, eventTypes: typesOf(input.eventTypes) ?? null });
  return { endpoint: r.ok ? r.value : null, userErrors: userErrorsOf(r) };
}

export async function deleteWebhookEndpoint(ctx: Context, input: { id: string }) {
  requireRole(ctx, 'Mutation.deleteWebhookEndpoint');
  const r = await ctx.events.deleteEndpoint(input.id);
  return { deletedId: r.ok ? r.value.id : null, userErrors: userErrorsOf(r) };
}

export async function rotateWebhookEndpointSecret(ctx: Context, input: { id: string }) {
  requireRole(ctx, 'Mutation.rotateWebhookEndpointSecret');
  const r = await ctx.events.rotateSecret(input.id);
  return {
    endpoint: r.ok ? r.value.endpoint : null,
    secret: r.ok ? r.value.secret : null,
    userErrors: userErrorsOf(r),
  };
}

export async function redeliverEvent(ctx: Context, input: { endpointId: string; eventId: string }) {
  requireRole(ctx, 'Mutation.redeliverEvent');
  const r = await ctx.events.redeliver(input);
  return { delivery: r.ok ? r.value : null, userErrors: userErrorsOf(r) };
}
