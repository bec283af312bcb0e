// Checkout in two steps (issue 10): hold with placeOrder, then payOrder (through lastunit's processor) or confirmOrder
// (a payment taken elsewhere), and a processor's success for a held order. Real HTTP, real sandbox, real PostgreSQL.
import { describe, expect, it } from 'vitest';
import { KEYS, ORDER_FIELDS } from './support/app.js';
import { SECRET, startPaymentsApp } from './support/payments.js';
import { signPayload } from '../payments/webhook-signature.js';
import { makeHoldsOverdue } from '../kit/holds.js';
import { sweepOnce } from '../orders/sweeper.js';

const t = await startPaymentsApp({ timeoutMs: 2_000 });

const FIELDS = `${ORDER_FIELDS} payment { state provider reference captured nextAction { type clientSecret redirectUrl } }`;
const PAY_ORDER = `mutation($input: PayOrderInput!) { payOrder(input: $input) { order { ${FIELDS} } nextAction { type clientSecret redirectUrl } userErrors { code field message } } }`;
const CONFIRM = `mutation($input: ConfirmOrderInput!) { confirmOrder(input: $input) { replayed order { ${FIELDS} } userErrors { code field message } } }`;
type Order = {
  id: string;
  status: string;
  reservation: { state: string; expiresAt: string } | null;
  payment: { state: string; provider: string; reference: string | null; captured: boolean; nextAction: unknown } | null;
};
type Answer = {
  order: Order | null;
  userErrors: { code: string; field: string[] | null }[];
  nextAction?: { type: string; clientSecret: string | null; redirectUrl: string | null } | null;
  replayed?: boolean;
};

let n = 0;
/** placeOrder without a payment: a RESERVED order holding `quantity` units. */
async function hold(sku: string, quantity = 1, customerId = `shopper-${++n}`) {
  const d = await t.http(
    `mutation($input: PlaceOrderInput!) { placeOrder(input: $input) { order { id status } userErrors { code } } }`,
    {
      input: { idempotencyKey: `hold-${++n}`, customerId, lines: [{ sku, quantity }] },
    },
  );
  expect(d.placeOrder.userErrors).toEqual([]);
  expect(d.placeOrder.order.status).toBe('RESERVED');
  return d.placeOrder.order.id as string;
}
/** A held order whose payment through lastunit is left AWAITING_PAYMENT: the sandbox sends no webhook for it. */
async function awaitingPayment(sku: string) {
  const id = await hold(sku);
  t.sandbox.configure({ webhookUrl: undefined });
  try {
    expect((await payOrder(id, 'tok_timeout_approve')).order!.status).toBe('AWAITING_PAYMENT');
  } finally {
    t.sandbox.configure({ webhookUrl: `${t.url}/webhooks/payments/sandbox` });
  }
  return id;
}
/** A new SKU with one unit, held and then expired by the sweeper: the unit is on sale again. */
async function expiredHold(sku: string) {
  await t.product(sku, 1);
  const id = await hold(sku);
  await makeHoldsOverdue(t.db, { orderIds: [id] });
  await sweepOnce(t.db, t.metrics);
  expect(await t.inventory(sku)).toEqual({ available: 1, reserved: 0, sold: 0 });
  return id;
}
const payOrder = async (orderId: string, token: string, key = KEYS.storefront) =>
  (await t.http(PAY_ORDER, { input: { orderId, payment: { provider: 'sandbox', token } } }, key)).payOrder as Answer;
const confirmOrder = async (orderId: string, paymentReference: string, key = KEYS.storefront) =>
  (await t.http(CONFIRM, { input: { orderId, paymentReference } }, key)).confirmOrder as Answer;
const order = async (id: string) =>
  (await t.http(`query($id: ID!) { order(id: $id) { ${FIELDS} } }`, { id })).order as Order;
const codes = (a: Answer) => a.userErrors.map((e) => e.code);

describe('payOrder', () => {
  it('pays a RESERVED order: HELD -> AWAITING_PAYMENT -> SOLD, CONFIRMED with the payment shown', async () => {
    await t.product('PO-OK', 2);
    const id = await hold('PO-OK');
    const r = await payOrder(id, 'tok_approve');
    expect(r.userErrors).toEqual([]);
    expect(r.order).toMatchObject({
      id,
      status: 'CONFIRMED',
      reservation: { state: 'SOLD' },
      payment: { state: 'AUTHORIZED', provider: 'sandbox', nextAction: null },
    });
    expect(r.order!.payment!.reference).toMatch(/^sbx_/);
    expect(await t.inventory('PO-OK')).toEqual({ available: 1, reserved: 0, sold: 1 });
    expect(await t.charges(id)).toMatchObject({ requests: 1, charges: 1 });
    const { rows } = await t.db.query(
      `SELECT payload->>'status' AS s FROM outbox WHERE topic = 'order_status' AND aggregate_key = $1 ORDER BY id`,
      [id],
    );
    // I9: every change after placeOrder's answer (its RESERVED is in that answer: nobody could be watching before)
    expect(rows.map((x) => x.s)).toEqual(['AWAITING_PAYMENT', 'CONFIRMED']);
    // paying again is refused and authorizes nothing
    expect(codes(await payOrder(id, 'tok_approve'))).toEqual(['ALREADY_FINAL']);
    expect((await t.charges(id)).requests).toBe(1);
  });

  it('answers PAYMENT_IN_FLIGHT to calls made while the first runs, and authorizes once', async () => {
    await t.product('PO-FLY', 1);
    const id = await hold('PO-FLY');
    const first = payOrder(id, 'tok_slow_1200');
    await t.eventually(async () => (await t.db.query(`SELECT 1 FROM payments WHERE order_id = $1`, [id])).rowCount);
    const during = await Promise.all(Array.from({ length: 5 }, () => payOrder(id, 'tok_approve')));
    for (const d of during) {
      expect(codes(d)).toEqual(['PAYMENT_IN_FLIGHT']);
      expect(d.order!.status).toBe('AWAITING_PAYMENT');
    }
    expect((await first).order!.status).toBe('CONFIRMED');
    expect(await t.charges(id)).toMatchObject({ requests: 1, charges: 1 });
    const { rows } = await t.db.query(`SELECT count(*)::int AS n FROM payments WHERE order_id = $1`, [id]);
    expect(rows[0].n).toBe(1);
  });

  it('after a decline the hold goes back to HELD (units stay held) and another card succeeds as a new attempt', async () => {
    await t.product('PO-RETRY', 1);
    const id = await hold('PO-RETRY');
    const expiresAt = (await order(id)).reservation!.expiresAt;
    const declined = await payOrder(id, 'tok_decline');
    expect(codes(declined)).toEqual(['PAYMENT_DECLINED']);
    expect(declined.order).toMatchObject({
      status: 'RESERVED',
      reservation: { state: 'HELD', expiresAt },
      payment: { state: 'DECLINED' },
    });
    expect(await t.inventory('PO-RETRY')).toEqual({ available: 0, reserved: 1, sold: 0 }); // still held: nobody else gets it
    expect(await t.availability('PO-RETRY')).toEqual({ available: 0, soldOut: true });
    const ok = await payOrder(id, 'tok_approve');
    expect(ok.userErrors).toEqual([]);
    expect(ok.order).toMatchObject({ status: 'CONFIRMED', payment: { state: 'AUTHORIZED' } });
    expect(await t.inventory('PO-RETRY')).toEqual({ available: 0, reserved: 0, sold: 1 });
    // two attempts, two processor keys: the declined one charged nothing
    expect(await t.charges(id)).toMatchObject({ charges: 0, status: 'failed' });
    expect(await t.charges(`${id}:2`)).toMatchObject({ charges: 1, status: 'succeeded' });
    // the first attempt's decline delivered again (late) changes nothing now
    const late = JSON.stringify({
      id: `evt_late_decline_${id}`,
      type: 'payment.failed',
      orderId: id,
      paymentKey: id,
      reason: 'card_declined',
    });
    expect((await t.webhook(late, signPayload(late, SECRET))).body.result).toBe('noop');
    expect((await order(id)).status).toBe('CONFIRMED');
  });

  it('a late decline of an old attempt does not touch the attempt in flight', async () => {
    await t.product('PO-OLD', 1);
    const id = await hold('PO-OLD');
    expect(codes(await payOrder(id, 'tok_decline'))).toEqual(['PAYMENT_DECLINED']);
    t.sandbox.configure({ webhookUrl: undefined });
    try {
      const pending = await payOrder(id, 'tok_timeout_approve');
      expect(pending.order!.status).toBe('AWAITING_PAYMENT');
      const late = JSON.stringify({
        id: `evt_old_${id}`,
        type: 'payment.failed',
        orderId: id,
        paymentKey: id,
        reason: 'card_declined',
      });
      expect((await t.webhook(late, signPayload(late, SECRET))).body.result).toBe('noop');
      expect(await order(id)).toMatchObject({ status: 'AWAITING_PAYMENT', payment: { state: 'UNKNOWN' } });
      const ok = JSON.stringify({
        id: `evt_new_${id}`,
        type: 'payment.succeeded',
        orderId: id,
        paymentKey: `${id}:2`,
        providerRef: 'sbx_x',
      });
      expect((await t.webhook(ok, signPayload(ok, SECRET))).body.result).toBe('confirmed');
    } finally {
      t.sandbox.configure({ webhookUrl: `${t.url}/webhooks/payments/sandbox` });
    }
  });

  it('answers RESERVATION_EXPIRED after the hold ended, authorizes nothing and puts the units back', async () => {
    await t.product('PO-LATE', 1);
    const id = await hold('PO-LATE');
    await makeHoldsOverdue(t.db, { orderIds: [id] });
    const r = await payOrder(id, 'tok_approve');
    expect(codes(r)).toEqual(['RESERVATION_EXPIRED']);
    expect(r.order).toMatchObject({ status: 'EXPIRED', reservation: { state: 'EXPIRED' } });
    expect(await t.inventory('PO-LATE')).toEqual({ available: 1, reserved: 0, sold: 0 });
    expect((await t.charges(id)).requests).toBe(0);
    // the same after the sweeper took it
    const id2 = await hold('PO-LATE');
    await makeHoldsOverdue(t.db, { orderIds: [id2] });
    await sweepOnce(t.db, t.metrics);
    expect(codes(await payOrder(id2, 'tok_approve'))).toEqual(['RESERVATION_EXPIRED']);
  });

  it("refuses bad input and other clients' orders, writing nothing", async () => {
    await t.product('PO-BAD', 1);
    const id = await hold('PO-BAD');
    expect(codes(await payOrder('not-a-uuid', 'tok_approve'))).toEqual(['NOT_FOUND']);
    expect(codes(await payOrder(id, ''))).toEqual(['INVALID_INPUT']);
    const other = await t.http(PAY_ORDER, {
      input: { orderId: id, payment: { provider: 'paypal', token: 'tok_approve' } },
    });
    expect(other.payOrder.userErrors[0]).toMatchObject({
      code: 'INVALID_INPUT',
      field: ['input', 'payment', 'provider'],
    });
    expect(codes(await payOrder(id, 'tok_approve', KEYS.storefront2))).toEqual(['NOT_FOUND']);
    expect(await order(id)).toMatchObject({ status: 'RESERVED', payment: null });
  });
});

describe('confirmOrder', () => {
  it('confirms a held order paid elsewhere (RESERVED -> CONFIRMED), idempotent on (orderId, paymentReference)', async () => {
    await t.product('CO-OK', 2);
    const id = await hold('CO-OK');
    const r = await confirmOrder(id, 'ext_pay_1');
    expect(r).toMatchObject({
      replayed: false,
      userErrors: [],
      order: {
        status: 'CONFIRMED',
        reservation: { state: 'SOLD' },
        payment: { state: 'EXTERNAL', provider: 'external', reference: 'ext_pay_1' },
      },
    });
    expect(await t.inventory('CO-OK')).toEqual({ available: 1, reserved: 0, sold: 1 });
    const again = await Promise.all([confirmOrder(id, 'ext_pay_1'), confirmOrder(id, 'ext_pay_1')]);
    for (const a of again) expect(a).toMatchObject({ replayed: true, userErrors: [], order: { status: 'CONFIRMED' } });
    expect(codes(await confirmOrder(id, 'ext_pay_other'))).toEqual(['ALREADY_FINAL']);
    expect(await t.inventory('CO-OK')).toEqual({ available: 1, reserved: 0, sold: 1 });
    const { rows } = await t.db.query(
      `SELECT count(*)::int AS n FROM outbox WHERE aggregate_key = $1 AND payload->>'status' = 'CONFIRMED'`,
      [id],
    );
    expect(rows[0].n).toBe(1);
    expect((await t.charges(id)).requests).toBe(0); // nothing went to our processor
  });

  it('re-claims the units of an expired hold by the same conditional write, with the availability event', async () => {
    const id = await expiredHold('CO-RECLAIM');
    const r = await confirmOrder(id, 'ext_late_1');
    expect(r).toMatchObject({ userErrors: [], order: { status: 'CONFIRMED', reservation: { state: 'SOLD' } } });
    expect(await t.inventory('CO-RECLAIM')).toEqual({ available: 0, reserved: 0, sold: 1 });
    expect(await t.availability('CO-RECLAIM')).toEqual({ available: 0, soldOut: true });
  });

  it('answers RESERVATION_EXPIRED and records the refund the caller owes when the units are gone; once', async () => {
    const id = await expiredHold('CO-GONE');
    await hold('CO-GONE'); // someone else takes the unit
    const answers = await Promise.all([confirmOrder(id, 'ext_gone'), confirmOrder(id, 'ext_gone')]);
    for (const a of answers) {
      expect(codes(a)).toEqual(['RESERVATION_EXPIRED']);
      expect(a.order!.status).toBe('EXPIRED');
    }
    expect(await t.inventory('CO-GONE')).toEqual({ available: 0, reserved: 1, sold: 0 });
    const { rows } = await t.db.query(`SELECT payment_reference FROM caller_refunds WHERE order_id = $1`, [id]);
    expect(rows).toEqual([{ payment_reference: 'ext_gone' }]);
  });

  it('answers PAYMENT_IN_FLIGHT while a payment through lastunit runs, and is open to admin keys', async () => {
    await t.product('CO-FLY', 2);
    const id = await awaitingPayment('CO-FLY');
    expect(codes(await confirmOrder(id, 'ext_fly'))).toEqual(['PAYMENT_IN_FLIGHT']);
    const id2 = await hold('CO-FLY');
    expect((await confirmOrder(id2, 'ext_admin', KEYS.admin)).order!.status).toBe('CONFIRMED');
    expect(codes(await confirmOrder(id2, ''))).toEqual(['INVALID_INPUT']);
  });
});

describe('a processor success for a held order', () => {
  it('answers 422 to a signed event the database cannot store (a NUL character), and records nothing', async () => {
    await t.product('WH-NUL', 1);
    const id = await hold('WH-NUL');
    const processed = async () =>
      (await t.db.query(`SELECT count(*)::int AS n FROM processed_events`)).rows[0].n as number;
    const before = await processed();
    for (const event of [
      { id: 'evt_nul_\u0000', type: 'payment.succeeded', orderId: id, providerRef: 'sbx_nul' },
      { id: `evt_nul_ref_${id}`, type: 'payment.succeeded', orderId: id, providerRef: 'sbx_\u0000' },
    ]) {
      const body = JSON.stringify(event);
      const a = await t.webhook(body, signPayload(body, SECRET));
      expect([a.status, a.body]).toEqual([
        422,
        { received: false, error: 'invalid input: a text value contains a NUL character or bytes that are not UTF-8' },
      ]);
    }
    expect(await processed()).toBe(before);
    expect(await order(id)).toMatchObject({ status: 'RESERVED' });
    expect(await t.inventory('WH-NUL')).toEqual({ available: 0, reserved: 1, sold: 0 });
  });

  it('confirms a RESERVED order the same way (it used to be dropped)', async () => {
    await t.product('WH-HELD', 1);
    const id = await hold('WH-HELD');
    const body = JSON.stringify({
      id: `evt_held_${id}`,
      type: 'payment.succeeded',
      orderId: id,
      providerRef: 'sbx_client_side',
    });
    const a = await t.webhook(body, signPayload(body, SECRET));
    expect(a.body.result).toBe('confirmed');
    expect(await order(id)).toMatchObject({
      status: 'CONFIRMED',
      payment: { state: 'AUTHORIZED', provider: 'sandbox', reference: 'sbx_client_side' },
    });
    expect(await t.inventory('WH-HELD')).toEqual({ available: 0, reserved: 0, sold: 1 });
    expect((await t.webhook(body, signPayload(body, SECRET))).body.result).toBe('duplicate');
  });

  // the host's post-commit hook is told which SKUs' availability moved (relay wake-up, cache drop): a confirmation
  // names a SKU only when it took units again, never for units that were held all along
  it("tells the host no SKU for a confirmation of held units (the webhook that beats the client's answer)", async () => {
    await t.product('WH-AWAIT', 1);
    const id = await awaitingPayment('WH-AWAIT');
    t.outboxCalls.length = 0;
    const ok = JSON.stringify({
      id: `evt_await_${id}`,
      type: 'payment.succeeded',
      orderId: id,
      paymentKey: id,
      providerRef: 'sbx_await',
    });
    expect((await t.webhook(ok, signPayload(ok, SECRET))).body.result).toBe('confirmed');
    expect(t.outboxCalls).toEqual([[]]); // outbox rows written (the status event), no availability change
    expect(await t.inventory('WH-AWAIT')).toEqual({ available: 0, reserved: 0, sold: 1 });
  });

  it('tells the host the SKU when a success confirms an expired hold and takes its units again', async () => {
    const id = await expiredHold('WH-RECLAIM');
    t.outboxCalls.length = 0;
    const ok = JSON.stringify({
      id: `evt_reclaim_${id}`,
      type: 'payment.succeeded',
      orderId: id,
      providerRef: 'sbx_reclaim',
    });
    expect((await t.webhook(ok, signPayload(ok, SECRET))).body.result).toBe('confirmed');
    expect(t.outboxCalls).toEqual([['WH-RECLAIM']]);
    expect(await t.inventory('WH-RECLAIM')).toEqual({ available: 0, reserved: 0, sold: 1 });
    expect(await t.availability('WH-RECLAIM')).toEqual({ available: 0, soldOut: true });
  });
});
