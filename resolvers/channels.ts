// Thin: channel arguments -> one call into orders/channels.ts -> payload. Every channel field is admin-only.
import { createGraphQLError } from 'graphql-yoga';
import type { Context } from './context.js';
import type { Channel } from '../orders/channels.js';
import { MAX_LISTING_SKUS } from '../orders/channels.js';
import { requireRole } from './auth.js';
import { userErrorsOf } from './user-errors.js';

type CreateInput = Parameters<Context['channels']['createChannel']>[0];
type UpdateInput = Parameters<Context['channels']['updateChannel']>[0];

export async function createChannel(ctx: Context, input: CreateInput) {
  requireRole(ctx, 'Mutation.createChannel');
  const r = await ctx.channels.createChannel(input);
  return {
    channel: r.ok ? r.value.channel : null,
    webhookSecret: r.ok ? r.value.webhookSecret : null,
    userErrors: userErrorsOf(r),
  };
}

export async function updateChannel(ctx: Context, input: UpdateInput) {
  requireRole(ctx, 'Mutation.updateChannel');
  const r = await ctx.channels.updateChannel(input);
  return { channel: r.ok ? r.value : null, userErrors: userErrorsOf(r) };
}

export async function channels(ctx: Context) {
  requireRole(ctx, 'Query.channels');
  return ctx.channels.channels();
}

export async function channel(ctx: Context, id: string) {
  requireRole(ctx, 'Query.channel');
  return ctx.channels.channel(id);
}

export async function listings(ctx: Context, c: Channel, skus: string[]) {
  if (skus.length > MAX_LISTING_SKUS) {
    throw createGraphQLError(`listings takes at most ${MAX_LISTING_SKUS} SKUs`, {
      extensions: { code: 'BAD_USER_INPUT', http: { status: 400 } },
    });
  }
  return ctx.channels.listings(c.id, skus);
}

export const oversells = (ctx: Context, c: Channel, last: number) =>
  ctx.channels.oversells(c.id, Math.max(1, Math.min(last, 100)));
export const order = (ctx: Context, c: Channel, externalOrderId: string) => ctx.channels.order(c.id, externalOrderId);
