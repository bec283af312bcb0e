// A capture that cannot succeed stops after a bounded number of attempts and shows as failed: Order.payment.captureState
// FAILED, the order's status event, lastunit_payment_captures_total{outcome="failed"}; the processor is not asked
// again, until an admin's captureOrder tries once more. Real HTTP and the sandbox processor, which refuses to capture a
// payment whose money already went back (409 not_capturable).
import { describe, expect, it } from 'vitest';
import { KEYS } from './support/app.js';
import { startPaymentsApp } from './support/payments.js';
import { captureOnce, MAX_CAPTURE_ATTEMPTS } from '../orders/capture.js';
import type { Processor } from '../payments/processor.js';

const t = await startPaymentsApp({ timeoutMs: 2_000 });
t.sandbox.configure({ webhookUrl: undefined }); // the answers decide; no webhook races the steps under test
const PAYMENT = `query($id: ID!) { order(id: $id) { status payment { state captured captureState } } }`;
const metric = async (outcome: string) => {
  const line = (await t.metrics.registry.metrics())
    .split('\n')
    .find((l) => l.startsWith(`lastunit_payment_captures_total{outcome="${outcome}"}`));
  return line ? Number(line.split(' ').pop()) : 0;
};

describe('a capture that cannot succeed', () => {
  it(`is tried ${MAX_CAPTURE_ATTEMPTS} times, then FAILED, visible to the admin, and never asked again by the worker`, async () => {
    await t.product('CAPF-1', 2);
    const paid = await t.pay(`capf-${Math.random()}`, 'CAPF-1', 'tok_approve');
    expect(paid.order!.status).toBe('CONFIRMED');
    const id = paid.order!.id;
    // the money went back at the processor behind lastunit's back: the charge can no longer be captured
    expect((await fetch(`${t.sandbox.url}/v1/payments/${id}/void`, { method: 'POST', body: '{}' })).status).toBe(200);
    let asked = 0;
    const counting: Processor = { ...t.processor(), capture: (key, ref) => (asked++, t.processor().capture(key, ref)) };
    const events = async () =>
      (
        await t.db.query(`SELECT count(*)::int AS n FROM outbox WHERE topic = 'order_status' AND aggregate_key = $1`, [
          id,
        ])
      ).rows[0].n;
    const before = await events();
    for (let pass = 0; pass < MAX_CAPTURE_ATTEMPTS + 5; pass++)
      expect(
        await captureOnce({ db: t.db, metrics: t.metrics, processor: counting }, { leaseSeconds: 0, retrySeconds: 0 }),
      ).toBe(0);
    expect(asked).toBe(MAX_CAPTURE_ATTEMPTS);
    expect([await metric('retry'), await metric('failed'), await metric('captured')]).toEqual([
      MAX_CAPTURE_ATTEMPTS - 1,
      1,
      0,
    ]);
    expect((await t.gql(PAYMENT, { id })).body.data.order).toEqual({
      status: 'CONFIRMED',
      payment: { state: 'AUTHORIZED', captured: false, captureState: 'FAILED' },
    });
    // the admin finds it among every client's orders
    const admin = await t.gql(
      `{ orders(first: 5, status: CONFIRMED) { edges { node { id payment { captureState } } } } }`,
      {},
      KEYS.admin,
    );
    expect(admin.body.data.orders.edges.find((e: any) => e.node.id === id).node.payment.captureState).toBe('FAILED');
    expect(await events()).toBe(before + 1); // the order's status event: those listening hear the money was not collected
    const { rows } = await t.db.query(`SELECT capture_attempts, capture_error FROM payments WHERE order_id = $1`, [id]);
    expect(rows[0]).toMatchObject({
      capture_attempts: MAX_CAPTURE_ATTEMPTS,
      capture_error: expect.stringMatching(/409/),
    });
    // an admin's captureOrder tries once more (and it still cannot go through)
    const again = await t.gql(
      `mutation($i: CaptureOrderInput!) { captureOrder(input: $i) { order { payment { captureState } } userErrors { code } } }`,
      { i: { orderId: id } },
      KEYS.admin,
    );
    expect(again.body.data.captureOrder).toMatchObject({
      userErrors: [{ code: 'PAYMENT_IN_FLIGHT' }],
      order: { payment: { captureState: 'FAILED' } },
    });
    expect((await t.charges(id)).captures).toBe(0);
  });

  it('a capture that fails a few times and then goes through is CAPTURED, once', async () => {
    await t.product('CAPF-2', 1);
    const paid = await t.pay(`capf2-${Math.random()}`, 'CAPF-2', 'tok_approve');
    const id = paid.order!.id;
    let fails = 3;
    const flaky: Processor = {
      ...t.processor(),
      capture: (key, ref) =>
        fails-- > 0 ? Promise.reject(new Error('processor unreachable')) : t.processor().capture(key, ref),
    };
    let captured = 0;
    for (let pass = 0; pass < 6; pass++)
      captured += await captureOnce(
        { db: t.db, metrics: t.metrics, processor: flaky },
        { leaseSeconds: 0, retrySeconds: 0, orderId: id },
      );
    expect(captured).toBe(1);
    expect((await t.gql(PAYMENT, { id })).body.data.order.payment).toEqual({
      state: 'AUTHORIZED',
      captured: true,
      captureState: 'CAPTURED',
    });
    expect((await t.charges(id)).captures).toBe(1);
  });
});
