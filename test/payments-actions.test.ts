// Next actions (3-D Secure) and the bound on AWAITING_PAYMENT (issue 10 item 3, issue 9 item 3): the shopper is told
// what to do, completes it with the processor, and the webhook decides; past PAYMENT_ACTION_TIMEOUT_SECONDS /
// PAYMENT_MAX_PENDING_SECONDS the reconciler cancels at the processor FIRST and releases only on its confirmation, and a
// success that wins the race confirms instead. Real HTTP, real sandbox, real PostgreSQL.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ORDER_FIELDS } from './support/app.js';
import { startPaymentsApp } from './support/payments.js';
import type { Processor } from '../payments/processor.js';

const t = await startPaymentsApp({ timeoutMs: 2_000 });
const FIELDS = `${ORDER_FIELDS} payment { state reference nextAction { type clientSecret redirectUrl } }`;
type NextAction = { type: string; clientSecret: string | null; redirectUrl: string | null };
type Answer = {
  order: {
    id: string;
    status: string;
    reservation: { state: string };
    payment: { state: string; nextAction: NextAction | null } | null;
  };
  nextAction: NextAction | null;
  userErrors: { code: string }[];
};

let n = 0;
async function place(sku: string, token: string | null): Promise<Answer> {
  const d = await t.http(
    `mutation($input: PlaceOrderInput!) { placeOrder(input: $input) { order { ${FIELDS} } nextAction { type clientSecret redirectUrl } userErrors { code } } }`,
    {
      input: {
        idempotencyKey: `act-${++n}`,
        customerId: `act-shopper-${n}`,
        lines: [{ sku, quantity: 1 }],
        ...(token ? { payment: { provider: 'sandbox', token } } : {}),
      },
    },
  );
  return d.placeOrder;
}
async function payOrder(orderId: string, token: string): Promise<Answer> {
  const d = await t.http(
    `mutation($input: PayOrderInput!) { payOrder(input: $input) { order { ${FIELDS} } nextAction { type clientSecret redirectUrl } userErrors { code } } }`,
    { input: { orderId, payment: { provider: 'sandbox', token } } },
  );
  return d.payOrder;
}
const order = async (id: string) =>
  (await t.http(`query($id: ID!) { order(id: $id) { ${FIELDS} } }`, { id })).order as Answer['order'];
/** The shopper completes (or fails) 3-D Secure with the processor, at the URL the next action gave. */
const complete = (a: NextAction, result: 'approve' | 'fail') =>
  fetch(a.redirectUrl!, { method: 'POST', body: JSON.stringify({ result }) }).then((r) => r.json());

describe('next actions (3-D Secure)', () => {
  it('tok_3ds_approve: AWAITING_PAYMENT with nextAction in the payload and Order.payment; completing it confirms', async () => {
    await t.product('ACT-OK', 1);
    const r = await place('ACT-OK', 'tok_3ds_approve');
    expect(r.userErrors).toEqual([]);
    expect(r.order).toMatchObject({
      status: 'AWAITING_PAYMENT',
      reservation: { state: 'AWAITING_PAYMENT' },
      payment: { state: 'ACTION_REQUIRED' },
    });
    expect(r.nextAction).toMatchObject({
      type: 'three_d_secure',
      clientSecret: expect.stringMatching(/^sbx_.*_secret$/),
      redirectUrl: expect.stringContaining('/_sandbox/actions/'),
    });
    expect(r.order.payment!.nextAction).toEqual(r.nextAction);
    expect(await t.inventory('ACT-OK')).toEqual({ available: 0, reserved: 1, sold: 0 }); // held while the shopper acts
    expect(await complete(r.nextAction!, 'approve')).toEqual({ status: 'succeeded' });
    await t.eventually(async () => (await order(r.order.id)).status === 'CONFIRMED');
    expect(await order(r.order.id)).toMatchObject({
      status: 'CONFIRMED',
      payment: { state: 'AUTHORIZED', nextAction: null },
    });
    expect(await t.inventory('ACT-OK')).toEqual({ available: 0, reserved: 0, sold: 1 });
    expect(await t.charges(r.order.id)).toMatchObject({ charges: 1 });
  });

  it('tok_3ds_fail: the failed authentication declines (placeOrder: REJECTED, units back)', async () => {
    await t.product('ACT-FAIL', 1);
    const r = await place('ACT-FAIL', 'tok_3ds_fail');
    expect(r.order.status).toBe('AWAITING_PAYMENT');
    expect(await complete(r.nextAction!, 'approve')).toEqual({ status: 'failed' });
    await t.eventually(async () => (await order(r.order.id)).status === 'REJECTED');
    expect(await t.inventory('ACT-FAIL')).toEqual({ available: 1, reserved: 0, sold: 0 });
  });

  it('payOrder with 3-D Secure: a failed authentication puts the hold back to HELD; another card then pays', async () => {
    await t.product('ACT-PAY', 1);
    const held = await place('ACT-PAY', null);
    const r = await payOrder(held.order.id, 'tok_3ds_approve');
    expect(r.order.status).toBe('AWAITING_PAYMENT');
    expect(r.nextAction?.type).toBe('three_d_secure');
    await complete(r.nextAction!, 'fail');
    await t.eventually(async () => (await order(held.order.id)).status === 'RESERVED');
    expect(await order(held.order.id)).toMatchObject({
      reservation: { state: 'HELD' },
      payment: { state: 'DECLINED' },
    });
    expect((await payOrder(held.order.id, 'tok_approve')).order.status).toBe('CONFIRMED');
  });
});

describe('AWAITING_PAYMENT is bounded: cancel at the processor first, release only on its confirmation', () => {
  // outcomes arrive only by the reconciler here: no webhook (not even the processor's `canceled`) races the step under test
  beforeAll(() => t.sandbox.configure({ webhookUrl: undefined }));
  afterAll(() => t.sandbox.configure({ webhookUrl: `${t.url}/webhooks/payments/sandbox` }));
  it('tok_3ds_abandon past PAYMENT_ACTION_TIMEOUT_SECONDS: cancelled at the processor, then the units released', async () => {
    await t.product('ACT-ABANDON', 1);
    const r = await place('ACT-ABANDON', 'tok_3ds_abandon');
    const id = r.order.id;
    await t.pastDeadline(id);
    expect(await t.reconcile()).toMatchObject({ pending: 1, cancelled: 0 }); // not past the bound: nothing cancelled
    expect((await t.charges(id)).cancels).toBe(0);
    await t.pastDeadline(id, { pastGiveUp: true });
    expect(await t.reconcile()).toMatchObject({ cancelled: 1 });
    expect(await t.charges(id)).toMatchObject({ cancels: 1, charges: 0, status: 'canceled' });
    expect(await order(id)).toMatchObject({
      status: 'EXPIRED',
      reservation: { state: 'EXPIRED' },
      payment: { state: 'CANCELLED' },
    });
    expect(await t.inventory('ACT-ABANDON')).toEqual({ available: 1, reserved: 0, sold: 0 });
  });

  it('keeps the hold while the processor has not confirmed the cancel', async () => {
    await t.product('ACT-NOCANCEL', 1);
    const r = await place('ACT-NOCANCEL', 'tok_3ds_abandon');
    await t.pastDeadline(r.order.id, { pastGiveUp: true });
    const unreachable: Processor = {
      ...t.processor(),
      cancel: async () => {
        throw new Error('processor unreachable');
      },
    };
    expect(await t.reconcile(unreachable)).toMatchObject({ errors: 1, cancelled: 0 });
    expect((await order(r.order.id)).status).toBe('AWAITING_PAYMENT'); // I7: only the processor's answer releases it
    expect(await t.inventory('ACT-NOCANCEL')).toEqual({ available: 0, reserved: 1, sold: 0 });
    await t.pastDeadline(r.order.id, { pastGiveUp: true });
    expect(await t.reconcile()).toMatchObject({ cancelled: 1 });
    expect((await order(r.order.id)).status).toBe('EXPIRED');
  });

  it('a success that wins the race with the cancel confirms the order instead', async () => {
    await t.product('ACT-RACE', 1);
    {
      const r = await place('ACT-RACE', 'tok_3ds_approve');
      const id = r.order.id;
      await complete(r.nextAction!, 'approve'); // the shopper finishes; its webhook never arrives
      // the reconciler's lookup still saw it pending (the answer crossed the success), then cancels: the processor says succeeded
      const stale: Processor = { ...t.processor(), lookup: async () => 'pending' };
      await t.pastDeadline(id, { pastGiveUp: true });
      expect(await t.reconcile(stale)).toMatchObject({ confirmed: 1, cancelled: 0 });
      expect(await order(id)).toMatchObject({ status: 'CONFIRMED', payment: { state: 'AUTHORIZED' } });
      expect(await t.charges(id)).toMatchObject({ charges: 1, cancels: 1, voids: 0 });
      expect(await t.inventory('ACT-RACE')).toEqual({ available: 0, reserved: 0, sold: 1 });
    }
  });

  it('a payment pending past PAYMENT_MAX_PENDING_SECONDS (payOrder): cancelled, then the hold goes back to HELD', async () => {
    await t.product('ACT-PENDING', 1);
    const held = await place('ACT-PENDING', null);
    const r = await payOrder(held.order.id, 'tok_slow_600000');
    expect(r.order.status).toBe('AWAITING_PAYMENT');
    await t.pastDeadline(held.order.id, { pastGiveUp: true });
    expect(await t.reconcile()).toMatchObject({ expired: 1 });
    expect(await t.charges(held.order.id)).toMatchObject({ cancels: 1, status: 'canceled', charges: 0 });
    expect(await order(held.order.id)).toMatchObject({
      status: 'RESERVED',
      reservation: { state: 'HELD' },
      payment: { state: 'CANCELLED' },
    });
  });
});
