// Thin: GraphQL arguments -> one call into the order domain -> payload. Argument types come from the schema's Pothos
// inputs, checked against the domain's input types where schema/order.ts calls these.
import type { Context } from './context.js';
import type {
  CancelOrderInput,
  ConfirmOrderInput,
  CreateBuyerTokenInput,
  OrderRecord,
  PayOrderInput,
  PaymentView,
  PlaceOrderInput,
  ReleaseInput,
} from '../orders/orders.js';
import { requireRole } from './auth.js';
import { userErrorsOf } from './user-errors.js';

export async function order(ctx: Context, id: string, token?: string | null): Promise<OrderRecord | null> {
  return ctx.orders.getOrder(ctx.caller, id, token);
}

export async function placeOrder(ctx: Context, input: PlaceOrderInput) {
  requireRole(ctx, 'Mutation.placeOrder');
  // the buyer as the operation guard resolved it for the per-buyer rate limit (app/use-operation-guard.ts), once
  const r = await ctx.orders.placeOrder(ctx.caller, input, await ctx.buyerOf(input));
  return { order: r.order, replayed: r.replayed, orderToken: r.orderToken, userErrors: userErrorsOf(r) };
}

export async function releaseReservation(ctx: Context, input: ReleaseInput & { token?: string | null }) {
  requireRole(ctx, 'Mutation.releaseReservation');
  const r = await ctx.orders.releaseReservation(ctx.caller, input);
  return { order: r.order, userErrors: userErrorsOf(r) };
}

export async function payOrder(ctx: Context, input: PayOrderInput) {
  requireRole(ctx, 'Mutation.payOrder'); // a public key with the order's token
  const r = await ctx.orders.payOrder(ctx.caller, input);
  return { order: r.order, userErrors: userErrorsOf(r) };
}

/** What the shopper must do for an order still AWAITING_PAYMENT (its latest attempt's next action), else null. */
export async function nextActionOf(ctx: Context, order: OrderRecord | null) {
  if (order?.status !== 'AWAITING_PAYMENT') return null;
  const payment = await ctx.orders.getPayment(ctx.caller, order.id);
  return payment?.state === 'ACTION_REQUIRED' ? payment.nextAction : null;
}

export async function confirmOrder(ctx: Context, input: ConfirmOrderInput) {
  requireRole(ctx, 'Mutation.confirmOrder');
  const r = await ctx.orders.confirmOrder(ctx.caller, input);
  return { order: r.order, replayed: r.ok ? r.replayed : false, userErrors: userErrorsOf(r) };
}

export async function payment(ctx: Context, orderId: string): Promise<PaymentView | null> {
  return ctx.orders.getPayment(ctx.caller, orderId);
}

export async function captureOrder(ctx: Context, input: { orderId: string }) {
  requireRole(ctx, 'Mutation.captureOrder');
  const r = await ctx.orders.captureOrder(input);
  return { order: r.order, userErrors: userErrorsOf(r) };
}

export async function cancelOrder(ctx: Context, input: CancelOrderInput) {
  requireRole(ctx, 'Mutation.cancelOrder');
  const r = await ctx.orders.cancelOrder(input);
  return { order: r.order, userErrors: userErrorsOf(r) };
}

export async function createBuyerToken(ctx: Context, input: CreateBuyerTokenInput) {
  requireRole(ctx, 'Mutation.createBuyerToken');
  const r = await ctx.orders.createBuyerToken(ctx.caller, input);
  return {
    token: r.ok ? r.value.token : null,
    expiresAt: r.ok ? r.value.expiresAt : null,
    userErrors: userErrorsOf(r),
  };
}
