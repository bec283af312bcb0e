// Capture and cancel (issue 10 items 4 and 6): a confirmed order's payment is captured once (the worker, or an admin
// captureOrder), retried safely; cancelOrder (admin) CONFIRMED -> CANCELLED gives the money back once (a cancel of the
// authorization before capture, a refund after) and restocks with the availability event. Real HTTP and sandbox.
import { describe, expect, it } from 'vitest';
import { KEYS, ORDER_FIELDS } from './support/app.js';
import { startPaymentsApp } from './support/payments.js';
import type { Processor } from '../payments/processor.js';

const t = await startPaymentsApp({ timeoutMs: 2_000 });
t.sandbox.configure({ webhookUrl: undefined }); // the answers decide; no webhook races the steps under test
const FIELDS = `${ORDER_FIELDS} payment { state captured }`;
type Order = {
  id: string;
  status: string;
  reservation: { state: string } | null;
  payment: { state: string; captured: boolean } | null;
};
const admin = async (op: 'captureOrder' | 'cancelOrder', input: Record<string, unknown>, key = KEYS.admin) => {
  const name = op === 'captureOrder' ? 'CaptureOrderInput' : 'CancelOrderInput';
  return (
    await t.http(
      `mutation($input: ${name}!) { ${op}(input: $input) { order { ${FIELDS} } userErrors { code } } }`,
      { input },
      key,
    )
  )[op] as { order: Order | null; userErrors: { code: string }[] };
};
const paid = async (sku: string) => {
  const r = await t.pay(`cc-${sku}-${Math.random()}`, sku, 'tok_approve');
  expect(r.order!.status).toBe('CONFIRMED');
  return r.order!.id;
};
const order = async (id: string) =>
  (await t.http(`query($id: ID!) { order(id: $id) { ${FIELDS} } }`, { id })).order as Order;
const compensations = async (id: string) =>
  (await t.db.query(`SELECT state FROM compensations WHERE order_id = $1`, [id])).rows;

describe('capture', () => {
  it('captures a confirmed payment once, however many workers run at once', async () => {
    await t.product('CAP-ONCE', 1);
    const id = await paid('CAP-ONCE');
    expect(await order(id)).toMatchObject({ payment: { state: 'AUTHORIZED', captured: false } });
    const done = await Promise.all([t.capture(), t.capture(), t.capture()]);
    expect(done.reduce((a, b) => a + b, 0)).toBe(1);
    expect(await t.capture()).toBe(0);
    expect(await t.charges(id)).toMatchObject({ captures: 1 });
    expect(await order(id)).toMatchObject({ payment: { captured: true } });
  });

  it('retries a capture the processor did not confirm, and records it once when it goes through', async () => {
    await t.product('CAP-RETRY', 1);
    const id = await paid('CAP-RETRY');
    const down: Processor = {
      ...t.processor(),
      capture: async () => {
        throw new Error('processor unreachable');
      },
    };
    expect(await t.capture(down, { leaseSeconds: 0 })).toBe(0);
    expect(await order(id)).toMatchObject({ payment: { captured: false } });
    expect(await t.capture(undefined, { leaseSeconds: 0 })).toBe(1);
    expect(await order(id)).toMatchObject({ payment: { captured: true } });
  });

  it('captureOrder (admin): captures on demand, idempotent; nothing to capture is ALREADY_FINAL; other keys are refused', async () => {
    await t.product('CAP-ADMIN', 2);
    const id = await paid('CAP-ADMIN');
    expect(await admin('captureOrder', { orderId: id })).toMatchObject({
      userErrors: [],
      order: { payment: { captured: true } },
    });
    expect(await admin('captureOrder', { orderId: id })).toMatchObject({
      userErrors: [],
      order: { payment: { captured: true } },
    });
    expect(await t.charges(id)).toMatchObject({ captures: 1 });
    const declined = await t.pay(`cap-no-${Math.random()}`, 'CAP-ADMIN', 'tok_decline');
    expect((await admin('captureOrder', { orderId: declined.order!.id })).userErrors.map((e) => e.code)).toEqual([
      'ALREADY_FINAL',
    ]);
    await expect(admin('captureOrder', { orderId: id }, KEYS.storefront)).rejects.toThrow(/FORBIDDEN/);
  });
});

describe('cancelOrder', () => {
  it('before capture: CANCELLED, units back on sale with the event, the authorization cancelled once, no capture after', async () => {
    await t.product('CAN-AUTH', 1);
    const id = await paid('CAN-AUTH');
    const before = (
      await t.db.query(
        `SELECT count(*)::int AS n FROM outbox WHERE topic = 'availability' AND aggregate_key = 'CAN-AUTH'`,
      )
    ).rows[0].n;
    const r = await admin('cancelOrder', { orderId: id, reason: 'customer changed their mind' });
    expect(r).toMatchObject({ userErrors: [], order: { status: 'CANCELLED', reservation: { state: 'RELEASED' } } });
    expect(await t.inventory('CAN-AUTH')).toEqual({ available: 1, reserved: 0, sold: 0 });
    expect(await t.availability('CAN-AUTH')).toEqual({ available: 1, soldOut: false });
    const after = (
      await t.db.query(
        `SELECT count(*)::int AS n FROM outbox WHERE topic = 'availability' AND aggregate_key = 'CAN-AUTH'`,
      )
    ).rows[0].n;
    expect(after).toBe(before + 1);
    // twice: the same answer, nothing more
    expect(await admin('cancelOrder', { orderId: id })).toMatchObject({
      userErrors: [],
      order: { status: 'CANCELLED' },
    });
    expect(await t.inventory('CAN-AUTH')).toEqual({ available: 1, reserved: 0, sold: 0 });
    expect(await compensations(id)).toEqual([{ state: 'PENDING' }]);
    expect(await t.capture()).toBe(0); // the capture is stopped
    await Promise.all([t.compensate(), t.compensate()]);
    expect(await compensations(id)).toEqual([{ state: 'DONE' }]);
    expect(await t.charges(id)).toMatchObject({ captures: 0, voids: 1, refunds: 0 });
  });

  it('after capture: the money goes back as a refund, once', async () => {
    await t.product('CAN-CAPT', 1);
    const id = await paid('CAN-CAPT');
    expect(await t.capture()).toBeGreaterThanOrEqual(1);
    expect((await admin('cancelOrder', { orderId: id })).order!.status).toBe('CANCELLED');
    await t.compensate();
    await t.compensate();
    expect(await t.charges(id)).toMatchObject({ captures: 1, voids: 1, refunds: 1 });
  });

  it("restock: false keeps the units sold; a payment taken elsewhere is recorded as the caller's to refund", async () => {
    await t.product('CAN-KEEP', 2);
    const id = await paid('CAN-KEEP');
    expect((await admin('cancelOrder', { orderId: id, restock: false })).order!.status).toBe('CANCELLED');
    expect(await t.inventory('CAN-KEEP')).toEqual({ available: 1, reserved: 0, sold: 1 });
    const held = await t.http(`mutation($input: PlaceOrderInput!) { placeOrder(input: $input) { order { id } } }`, {
      input: {
        idempotencyKey: `can-ext-${Math.random()}`,
        customerId: 'can-ext',
        lines: [{ sku: 'CAN-KEEP', quantity: 1 }],
      },
    });
    const ext = held.placeOrder.order.id as string;
    await t.http(`mutation($input: ConfirmOrderInput!) { confirmOrder(input: $input) { userErrors { code } } }`, {
      input: { orderId: ext, paymentReference: 'ext_can_1' },
    });
    expect((await admin('cancelOrder', { orderId: ext })).order!.status).toBe('CANCELLED');
    expect((await t.db.query(`SELECT payment_reference FROM caller_refunds WHERE order_id = $1`, [ext])).rows).toEqual([
      { payment_reference: 'ext_can_1' },
    ]);
    expect(await compensations(ext)).toEqual([]);
    expect(await t.inventory('CAN-KEEP')).toEqual({ available: 1, reserved: 0, sold: 1 });
  });

  it("restock of a confirmed bundle order puts each component's units back on sale, with the events and purchase counts", async () => {
    await t.product('CAN-BP', 5);
    await t.product('CAN-BQ', 5);
    const made = await t.http(
      `mutation($input: CreateProductInput!) { createProduct(input: $input) { userErrors { code } } }`,
      {
        input: {
          sku: 'CAN-BKIT',
          name: 'Kit',
          priceAmount: 3000,
          currencyCode: 'USD',
          components: [
            { sku: 'CAN-BP', quantity: 1 },
            { sku: 'CAN-BQ', quantity: 2 },
          ],
        },
      },
      KEYS.admin,
    );
    expect(made.createProduct.userErrors).toEqual([]);
    const limit = await t.http(
      `mutation { setPurchaseLimit(input: {sku: "CAN-BQ", limit: 4}) { userErrors { code } } }`,
      {},
      KEYS.admin,
    );
    expect(limit.setPurchaseLimit.userErrors).toEqual([]);
    const r = await t.pay(`cc-bkit-${Math.random()}`, 'CAN-BKIT', 'tok_approve', 2);
    expect(r.order!.status).toBe('CONFIRMED');
    const id = r.order!.id;
    expect(await t.inventory('CAN-BP')).toEqual({ available: 3, reserved: 0, sold: 2 });
    expect(await t.inventory('CAN-BQ')).toEqual({ available: 1, reserved: 0, sold: 4 });
    expect((await t.db.query(`SELECT units FROM customer_purchases WHERE sku = 'CAN-BQ'`)).rows).toEqual([
      { units: 4 },
    ]);
    const events = async () =>
      (
        await t.db.query(
          `SELECT aggregate_key AS sku, count(*)::int AS n FROM outbox WHERE topic = 'availability' AND aggregate_key LIKE 'CAN-B%' GROUP BY 1 ORDER BY 1`,
        )
      ).rows as { sku: string; n: number }[];
    const before = await events();
    const c = await admin('cancelOrder', { orderId: id, restock: true });
    expect(c).toMatchObject({ userErrors: [], order: { status: 'CANCELLED', reservation: { state: 'RELEASED' } } });
    expect(await t.inventory('CAN-BP')).toEqual({ available: 5, reserved: 0, sold: 0 });
    expect(await t.inventory('CAN-BQ')).toEqual({ available: 5, reserved: 0, sold: 0 });
    expect(await t.inventory('CAN-BKIT')).toMatchObject({ reserved: 0, sold: 0 });
    expect(await t.availability('CAN-BKIT')).toEqual({ available: 2, soldOut: false });
    // one availability event per component (and the bundle's, announced with them)
    const after = await events();
    for (const sku of ['CAN-BP', 'CAN-BQ', 'CAN-BKIT']) {
      expect(after.find((e) => e.sku === sku)!.n).toBeGreaterThan(before.find((e) => e.sku === sku)?.n ?? 0);
    }
    // the customer's purchase count of the component is given back
    expect((await t.db.query(`SELECT units FROM customer_purchases WHERE sku = 'CAN-BQ'`)).rows).toEqual([]);
    // twice: the same answer, nothing moves again
    expect((await admin('cancelOrder', { orderId: id, restock: true })).order!.status).toBe('CANCELLED');
    expect(await t.inventory('CAN-BQ')).toEqual({ available: 5, reserved: 0, sold: 0 });
  });

  it('refuses an order that is not confirmed (ALREADY_FINAL) and unknown ids (NOT_FOUND), changing nothing', async () => {
    await t.product('CAN-HELD', 1);
    const held = await t.http(`mutation($input: PlaceOrderInput!) { placeOrder(input: $input) { order { id } } }`, {
      input: {
        idempotencyKey: `can-held-${Math.random()}`,
        customerId: 'can-held',
        lines: [{ sku: 'CAN-HELD', quantity: 1 }],
      },
    });
    expect((await admin('cancelOrder', { orderId: held.placeOrder.order.id })).userErrors.map((e) => e.code)).toEqual([
      'ALREADY_FINAL',
    ]);
    expect(
      (await admin('cancelOrder', { orderId: '00000000-0000-4000-8000-000000000000' })).userErrors.map((e) => e.code),
    ).toEqual(['NOT_FOUND']);
    expect(await t.inventory('CAN-HELD')).toEqual({ available: 0, reserved: 1, sold: 0 });
  });
});
