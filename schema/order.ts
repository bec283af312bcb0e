// The Order type, its inputs and payloads, and the root fields that return them.
import { builder } from './builder.js';
import { Money, UserError } from './common.js';
import type { OrderRecord, PaymentView } from '../orders/orders.js';
import { rejectionOf } from '../orders/errors.js';
import { toUserError } from '../resolvers/user-errors.js';
import * as r from '../resolvers/orders.js';

export const OrderStatus = builder.enumType('OrderStatus', {
  description: 'Where an order is in its life (docs/architecture.md, "The life of an order").',
  values: {
    PROCESSING: { description: 'The first request with this key is still running.' },
    RESERVED: { description: 'Units are held for this order until reservation.expiresAt.' },
    AWAITING_PAYMENT: { description: 'A payment outcome is unknown; the units stay held until the processor answers.' },
    CONFIRMED: { description: 'Paid; the units are sold.' },
    REJECTED: { description: 'Not placed; see rejection.' },
    CANCELLED: { description: 'Released by the customer; the units went back on sale.' },
    EXPIRED: { description: 'The hold ran out before payment; the units went back on sale.' },
  } as const,
});
const ReservationState = builder.enumType('ReservationState', {
  values: ['HELD', 'AWAITING_PAYMENT', 'SOLD', 'RELEASED', 'EXPIRED'] as const,
});

const OrderLine = builder.objectRef<OrderRecord['lines'][number] & { currency: string }>('OrderLine').implement({
  fields: (t) => ({
    sku: t.exposeString('sku'),
    quantity: t.exposeInt('quantity'),
    unitPrice: t.field({
      type: Money,
      description: 'Price per unit when the order was placed.',
      resolve: (l) => ({ amount: l.unitAmount, currencyCode: l.currency }),
    }),
  }),
});
const Reservation = builder.objectRef<NonNullable<OrderRecord['reservation']>>('Reservation').implement({
  description: "Summary of the order's holds: the earliest expiry and their state.",
  fields: (t) => ({
    state: t.field({ type: ReservationState, resolve: (x) => x.state }),
    expiresAt: t.field({
      type: 'DateTime',
      description: 'When an unpaid hold is released.',
      resolve: (x) => x.expiresAt,
    }),
  }),
});

const PaymentState = builder.enumType('PaymentState', {
  description: "Where the order's latest payment attempt is (docs/payments.md).",
  values: {
    PENDING: { description: 'Sent to the processor; no answer yet.' },
    UNKNOWN: { description: 'The processor did not answer in time; the reconciler asks it by identity.' },
    ACTION_REQUIRED: { description: 'The processor needs the shopper (3-D Secure, a redirect): see nextAction.' },
    AUTHORIZED: { description: 'Approved; the money is held (captured once `captured` is true).' },
    DECLINED: { description: 'Declined by the processor.' },
    NOT_FOUND: { description: 'The processor has no such payment after the deadline.' },
    CANCELLED: { description: 'Cancelled at the processor (not completed in time).' },
    EXTERNAL: { description: 'Taken outside lastunit and reported with confirmOrder.' },
  } as const,
});
const CaptureState = builder.enumType('CaptureState', {
  description: 'Whether the money of a confirmed payment was collected (PAYMENT_CAPTURE, docs/payments.md).',
  values: {
    NONE: { description: 'Nothing to capture (not confirmed, or the capture was stopped by a cancellation).' },
    PENDING: { description: 'To be captured; a failed attempt is retried with a backoff.' },
    CAPTURED: { description: 'Collected, once.' },
    EXTERNAL: { description: 'Taken outside lastunit (confirmOrder): nothing to capture here.' },
    FAILED: {
      description:
        'Every attempt failed (10, over about 8.5 hours): look at it; an admin captureOrder tries once more.',
    },
  } as const,
});
const NextAction = builder.objectRef<NonNullable<PaymentView['nextAction']>>('NextAction').implement({
  description:
    'What the shopper must do for the processor before it decides: run 3-D Secure with the client secret, or follow the redirect.',
  fields: (t) => ({
    type: t.exposeString('type', {
      description: "The processor's kind of action, e.g. three_d_secure or use_stripe_sdk.",
    }),
    clientSecret: t.exposeString('clientSecret', {
      nullable: true,
      description: "For the processor's client library (Stripe.js handleNextAction).",
    }),
    redirectUrl: t.exposeString('redirectUrl', {
      nullable: true,
      description: 'Where to send the shopper, when the action is a redirect.',
    }),
  }),
});
const Payment = builder.objectRef<PaymentView>('Payment').implement({
  description: "The order's latest payment attempt.",
  fields: (t) => ({
    state: t.field({ type: PaymentState, resolve: (p) => p.state }),
    provider: t.exposeString('provider', { description: 'The processor, or "external" for confirmOrder.' }),
    reference: t.exposeString('reference', {
      nullable: true,
      description: "The processor's payment id (or the reference given to confirmOrder), once known.",
    }),
    nextAction: t.field({
      type: NextAction,
      nullable: true,
      description: 'Set while state is ACTION_REQUIRED.',
      resolve: (p) => (p.state === 'ACTION_REQUIRED' ? p.nextAction : null),
    }),
    captured: t.boolean({
      description: 'The money was collected (PAYMENT_CAPTURE).',
      resolve: (p) => p.captureState === 'CAPTURED',
    }),
    captureState: t.field({
      type: CaptureState,
      description: 'Where collecting the money is: FAILED when the processor refused every attempt.',
      resolve: (p) => p.captureState,
    }),
  }),
});

export const Order = builder.objectRef<OrderRecord>('Order').implement({
  description: 'An order, visible only to the API client that placed it.',
  fields: (t) => ({
    id: t.exposeID('id'),
    status: t.field({ type: OrderStatus, resolve: (o) => o.status }),
    customerId: t.exposeID('customerId'),
    lines: t.field({ type: [OrderLine], resolve: (o) => o.lines.map((l) => ({ ...l, currency: o.currency })) }),
    total: t.field({ type: Money, resolve: (o) => ({ amount: o.totalAmount, currencyCode: o.currency }) }),
    reservation: t.field({ type: Reservation, nullable: true, resolve: (o) => o.reservation }),
    payment: t.field({
      type: Payment,
      nullable: true,
      description: 'The latest payment attempt; null when none was made.',
      resolve: (o, _a, ctx) => r.payment(ctx, o.id),
    }),
    rejection: t.field({
      type: UserError,
      nullable: true,
      description: 'Why the order was rejected.',
      resolve: (o) => {
        const e = rejectionOf(o);
        return e && toUserError(e);
      },
    }),
    createdAt: t.field({ type: 'DateTime', resolve: (o) => o.createdAt }),
    updatedAt: t.field({ type: 'DateTime', resolve: (o) => o.updatedAt }),
    channel: t.string({
      nullable: true,
      description: 'The marketplace channel that sold it (docs/channels.md); null for orders placed here.',
      resolve: (o) => o.channel ?? null,
    }),
  }),
});

builder.queryField('order', (t) =>
  t.field({
    type: Order,
    nullable: true,
    description:
      'One of your orders by id; null if it does not exist or another client placed it. A public key must also send the ' +
      "order's token (PlaceOrderPayload.orderToken); without it, or with another order's, the answer is null.",
    args: { id: t.arg.id({ required: true }), token: t.arg.string({ required: false }) },
    resolve: (_root, args, ctx) => r.order(ctx, args.id, args.token),
  }),
);

const OrderLineInput = builder.inputType('OrderLineInput', {
  fields: (t) => ({
    sku: t.string({ required: true }),
    quantity: t.int({ required: true, description: '1 to MAX_LINE_QUANTITY (default 100).' }),
  }),
});
const PaymentInput = builder.inputType('PaymentInput', {
  description:
    'Pay while placing: the units are held first, then the payment is authorized (docs/architecture.md, "The life of an order", step 3).',
  fields: (t) => ({
    provider: t.string({ required: true, description: 'The configured processor: "sandbox" (default) or "stripe".' }),
    token: t.string({
      required: true,
      description:
        "The payment method from the processor's client library (Stripe: a PaymentMethod id; sandbox: e.g. tok_approve).",
    }),
  }),
});
const PlaceOrderInput = builder.inputType('PlaceOrderInput', {
  fields: (t) => ({
    idempotencyKey: t.string({
      required: true,
      description:
        'Minted by the client when the shopper taps "place order" and sent again on every retry (max 255 characters).',
    }),
    customerId: t.id({ required: true }),
    lines: t.field({
      type: [OrderLineInput],
      required: true,
      description: '1 to MAX_LINES (default 50) lines, one per SKU.',
    }),
    payment: t.field({
      type: PaymentInput,
      required: false,
      description:
        'Authorize a payment after the hold. Part of the request fingerprint: the same key with another payment is IDEMPOTENCY_KEY_REUSED.',
    }),
    buyerToken: t.string({
      required: false,
      description:
        "Public keys: a token from createBuyerToken (minted by the shop's backend) vouching for customerId, so the purchase " +
        "and hold limits count that customer; without one they count the client's address. Server-side keys need none " +
        '(it is ignored). Not part of the request fingerprint.',
    }),
  }),
});
const PlaceOrderPayload = builder.objectRef<Awaited<ReturnType<typeof r.placeOrder>>>('PlaceOrderPayload').implement({
  fields: (t) => ({
    order: t.field({ type: Order, nullable: true, resolve: (p) => p.order }),
    userErrors: t.field({ type: [UserError], resolve: (p) => p.userErrors }),
    replayed: t.exposeBoolean('replayed', {
      description: 'True when this answer is a replay of an earlier request with the same key.',
    }),
    nextAction: t.field({
      type: NextAction,
      nullable: true,
      description:
        'Set when the processor needs the shopper (3-D Secure, redirect) before it decides; the order stays AWAITING_PAYMENT.',
      resolve: (p, _a, ctx) => r.nextActionOf(ctx, p.order),
    }),
    orderToken: t.string({
      nullable: true,
      description:
        "The order's secret token, in the answer that created the order only (null in a replay: only its hash is kept). " +
        'A public key sends it back as `token` to order, releaseReservation and orderStatusChanged; keep it with the order.',
      resolve: (p) => p.orderToken ?? null,
    }),
  }),
});

const ReleaseReservationInput = builder.inputType('ReleaseReservationInput', {
  fields: (t) => ({
    orderId: t.id({ required: true }),
    reason: t.string({ required: false }),
    token: t.string({
      required: false,
      description: "The order's token (PlaceOrderPayload.orderToken): required with a public key.",
    }),
  }),
});
const ReleaseReservationPayload = builder
  .objectRef<Awaited<ReturnType<typeof r.releaseReservation>>>('ReleaseReservationPayload')
  .implement({
    fields: (t) => ({
      order: t.field({ type: Order, nullable: true, resolve: (p) => p.order }),
      userErrors: t.field({ type: [UserError], resolve: (p) => p.userErrors }),
    }),
  });

const PayOrderInput = builder.inputType('PayOrderInput', {
  fields: (t) => ({
    orderId: t.id({ required: true }),
    token: t.string({ required: false, description: "The order's secret token (needed with a public key)." }),
    payment: t.field({ type: PaymentInput, required: true }),
  }),
});
const PayOrderPayload = builder.objectRef<Awaited<ReturnType<typeof r.payOrder>>>('PayOrderPayload').implement({
  fields: (t) => ({
    order: t.field({ type: Order, nullable: true, resolve: (p) => p.order }),
    nextAction: t.field({
      type: NextAction,
      nullable: true,
      description: 'Set when the processor needs the shopper (3-D Secure, redirect).',
      resolve: (p, _a, ctx) => r.nextActionOf(ctx, p.order),
    }),
    userErrors: t.field({ type: [UserError], resolve: (p) => p.userErrors }),
  }),
});
const ConfirmOrderInput = builder.inputType('ConfirmOrderInput', {
  fields: (t) => ({
    orderId: t.id({ required: true }),
    paymentReference: t.string({
      required: true,
      description:
        "Your processor's id of the payment you took (1-255 characters); the call is idempotent on (orderId, paymentReference).",
    }),
  }),
});
const ConfirmOrderPayload = builder
  .objectRef<Awaited<ReturnType<typeof r.confirmOrder>>>('ConfirmOrderPayload')
  .implement({
    fields: (t) => ({
      order: t.field({ type: Order, nullable: true, resolve: (p) => p.order }),
      replayed: t.exposeBoolean('replayed', {
        description: 'True when this order was already confirmed with this reference.',
      }),
      userErrors: t.field({ type: [UserError], resolve: (p) => p.userErrors }),
    }),
  });

const CaptureOrderInput = builder.inputType('CaptureOrderInput', {
  fields: (t) => ({ orderId: t.id({ required: true }) }),
});
const CancelOrderInput = builder.inputType('CancelOrderInput', {
  fields: (t) => ({
    orderId: t.id({ required: true }),
    restock: t.boolean({
      required: false,
      defaultValue: true,
      description: 'Put the sold units back on sale (default true).',
    }),
    reason: t.string({ required: false, description: 'Why (at most 500 characters); kept with the refund.' }),
  }),
});
const AdminOrderPayload = builder.objectRef<Awaited<ReturnType<typeof r.cancelOrder>>>('AdminOrderPayload').implement({
  fields: (t) => ({
    order: t.field({ type: Order, nullable: true, resolve: (p) => p.order }),
    userErrors: t.field({ type: [UserError], resolve: (p) => p.userErrors }),
  }),
});

builder.mutationFields((t) => ({
  captureOrder: t.field({
    type: AdminOrderPayload,
    description:
      'Admin: collect the money of a CONFIRMED order (PAYMENT_CAPTURE=manual; with on_confirm the reconciler does it). Recorded once; safe to retry.',
    args: { input: t.arg({ type: CaptureOrderInput, required: true }) },
    resolve: (_root, { input }, ctx) => r.captureOrder(ctx, input),
  }),
  cancelOrder: t.field({
    type: AdminOrderPayload,
    description:
      'Admin: CONFIRMED -> CANCELLED. The money goes back once (a refund after capture, a cancel of the authorization before; a payment taken elsewhere is recorded as yours to refund); with restock the units go back on sale. A marketplace order: the marketplace is asked to cancel it, once.',
    args: { input: t.arg({ type: CancelOrderInput, required: true }) },
    resolve: (_root, { input }, ctx) => r.cancelOrder(ctx, input),
  }),
  payOrder: t.field({
    type: PayOrderPayload,
    description:
      'Pay for a RESERVED order while its hold lasts: HELD -> AWAITING_PAYMENT -> SOLD. A call while another runs is PAYMENT_IN_FLIGHT (never a second authorization); a decline keeps the hold (try another card); an ended hold is RESERVATION_EXPIRED.',
    args: { input: t.arg({ type: PayOrderInput, required: true }) },
    resolve: (_root, { input }, ctx) => r.payOrder(ctx, input),
  }),
  confirmOrder: t.field({
    type: ConfirmOrderPayload,
    description:
      'Confirm a held order paid outside lastunit (RESERVED -> CONFIRMED, the reference stored). An ended hold is re-claimed if its units are still there; otherwise RESERVATION_EXPIRED and you must refund.',
    args: { input: t.arg({ type: ConfirmOrderInput, required: true }) },
    resolve: (_root, { input }, ctx) => r.confirmOrder(ctx, input),
  }),
  placeOrder: t.field({
    type: PlaceOrderPayload,
    description: 'Claim units for an order, all lines or none. Idempotent by (client, customerId, idempotencyKey).',
    args: { input: t.arg({ type: PlaceOrderInput, required: true }) },
    resolve: (_root, { input }, ctx) => r.placeOrder(ctx, input),
  }),
  releaseReservation: t.field({
    type: ReleaseReservationPayload,
    description: 'Give held units back. Idempotent: releasing twice returns the same order.',
    args: { input: t.arg({ type: ReleaseReservationInput, required: true }) },
    resolve: (_root, { input }, ctx) => r.releaseReservation(ctx, input),
  }),
}));
