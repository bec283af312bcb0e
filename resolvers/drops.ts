// Thin: drop arguments -> the order domain's drop use cases -> payload (docs/drops.md).
import type { Context } from './context.js';
import type { CreateDropInput, EnterDropInput, JoinWaitlistInput } from '../orders/orders.js';
import { requireRole } from './auth.js';
import { userErrorsOf } from './user-errors.js';

export async function createDrop(ctx: Context, input: CreateDropInput) {
  requireRole(ctx, 'Mutation.createDrop');
  const r = await ctx.orders.createDrop(ctx.caller, input);
  return { drop: r.ok ? r.value : null, userErrors: userErrorsOf(r) };
}

export async function enterDrop(ctx: Context, input: EnterDropInput) {
  requireRole(ctx, 'Mutation.enterDrop');
  const r = await ctx.orders.enterDrop(ctx.caller, input);
  return { entry: r.ok ? r.value : null, entryToken: r.entryToken, userErrors: userErrorsOf(r) };
}

export async function drop(ctx: Context, id: string) {
  requireRole(ctx, 'Query.drop');
  return ctx.orders.getDrop(id);
}

export async function drops(ctx: Context, first: number) {
  requireRole(ctx, 'Query.drops');
  return ctx.orders.listDrops(first);
}

export async function dropEntry(ctx: Context, id: string, token?: string | null) {
  requireRole(ctx, 'Query.dropEntry');
  return ctx.orders.getDropEntry(ctx.caller, id, token);
}

/** A drawn drop's entry ids in draw order (DropDraw.entryIds). */
export const drawOrder = (ctx: Context, dropId: string) => ctx.orders.drawOrder(dropId);

export async function joinWaitlist(ctx: Context, input: JoinWaitlistInput) {
  requireRole(ctx, 'Mutation.joinWaitlist');
  const r = await ctx.orders.joinWaitlist(ctx.caller, input);
  return { entry: r.ok ? r.value : null, entryToken: r.entryToken, userErrors: userErrorsOf(r) };
}

export async function waitlistEntry(ctx: Context, id: string, token?: string | null) {
  requireRole(ctx, 'Query.waitlistEntry');
  return ctx.orders.getWaitlistEntry(ctx.caller, id, token);
}
