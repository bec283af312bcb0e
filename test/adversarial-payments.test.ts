// An adversarial client of our own, money side: concurrency anomalies through the public API (in the spirit of
// ACIDRain) against real HTTP, the real sandbox processor and its webhooks. Each attack ends with the ledger audit read
// from PostgreSQL and the processor (test/support/ledger.ts): stock conserved and never negative, counters equal to
// the orders, and exactly one net charge per confirmed order, none for any other.
import { describe, expect, it } from 'vitest';
import { KEYS } from './support/app.js';
import { startPaymentsApp } from './support/payments.js';
import { auditLedger } from './support/ledger.js';
import { sweepOnce } from '../orders/sweeper.js';
import { signPayload } from '../payments/webhook-signature.js';
import { SECRET } from './support/payments.js';

const t = await startPaymentsApp({ timeoutMs: 2_000 });
const stocked: Record<string, number> = {};
const product = async (sku: string, n: number) => {
  await t.product(sku, n);
  stocked[sku] = n;
};
const charges = async (key: string) =>
  (await fetch(`${t.sandbox.url}/_sandbox/charges/${encodeURIComponent(key)}`)).json() as never;
/** Settles what the workers would settle (compensations, overdue payments), then audits every SKU of this file. */
async function audit() {
  await t.compensate();
  expect(await auditLedger(t.db, { stocked, charges })).toEqual([]);
}
let n = 0;
const hold = async (sku: string, quantity = 1) => {
  const d = await t.http(
    `mutation($i: PlaceOrderInput!) { placeOrder(input: $i) { order { id status } userErrors { code } } }`,
    {
      i: { idempotencyKey: `adv-p-${++n}`, customerId: `adv-p-${n}`, lines: [{ sku, quantity }] },
    },
  );
  expect(d.placeOrder.order.status).toBe('RESERVED');
  return d.placeOrder.order.id as string;
};
const PAY = `mutation($i: PayOrderInput!) { payOrder(input: $i) { order { id status } userErrors { code } } }`;
const CANCEL = `mutation($i: CancelOrderInput!) { cancelOrder(input: $i) { order { status } userErrors { code } } }`;
const RELEASE = `mutation($i: ReleaseReservationInput!) { releaseReservation(input: $i) { order { status } userErrors { code } } }`;
const codeOf = (r: { body: any }, field: string) =>
  r.body.errors?.[0]?.extensions?.code ?? r.body.data[field].userErrors[0]?.code ?? r.body.data[field].order?.status;
const tally = (all: string[]) => all.reduce<Record<string, number>>((m, c) => ({ ...m, [c]: (m[c] ?? 0) + 1 }), {});

describe('attacks on the money', () => {
  it('double pay: 20 concurrent payOrders of one held order authorize once and charge once', async () => {
    await product('ADV-PAY', 3);
    const id = await hold('ADV-PAY');
    const answers = await Promise.all(
      Array.from({ length: 20 }, () =>
        t.gql(PAY, { i: { orderId: id, payment: { provider: 'sandbox', token: 'tok_approve' } } }),
      ),
    );
    const outcomes = tally(answers.map((a) => codeOf(a, 'payOrder')));
    expect(outcomes.CONFIRMED).toBe(1);
    expect(Object.keys(outcomes).every((k) => ['CONFIRMED', 'PAYMENT_IN_FLIGHT', 'ALREADY_FINAL'].includes(k))).toBe(
      true,
    );
    expect(await t.charges(id)).toMatchObject({ charges: 1 });
    expect((await t.db.query(`SELECT count(*)::int AS n FROM payments WHERE order_id = $1`, [id])).rows[0].n).toBe(1);
    await audit();
  });

  it('double refund: 20 concurrent cancelOrders and three compensation workers give the money back once', async () => {
    await product('ADV-REFUND', 2);
    const paid = await t.pay(`adv-refund-${Math.random()}`, 'ADV-REFUND', 'tok_approve');
    const id = paid.order!.id;
    expect(await t.capture()).toBeGreaterThanOrEqual(1);
    const answers = await Promise.all(
      Array.from({ length: 20 }, () => t.gql(CANCEL, { i: { orderId: id, reason: 'fraud' } }, KEYS.admin)),
    );
    expect(answers.map((a) => codeOf(a, 'cancelOrder'))).toEqual(Array(20).fill('CANCELLED'));
    await Promise.all([t.compensate(), t.compensate(), t.compensate()]);
    expect(await t.charges(id)).toMatchObject({ charges: 1, captures: 1, voids: 1, refunds: 1 });
    expect((await t.db.query(`SELECT count(*)::int AS n FROM compensations WHERE order_id = $1`, [id])).rows[0].n).toBe(
      1,
    );
    await audit();
  });

  it("release racing pay at the hold's end: whichever wins, no unit twice and no money kept for an unsold unit", async () => {
    await product('ADV-TTL', 10);
    const ids = await Promise.all(Array.from({ length: 10 }, () => hold('ADV-TTL')));
    // every hold ends 200 ms from now: the shopper's payment and release land at random moments around it while the
    // sweeper runs every 20 ms (a payment in flight at the end is never swept, I7)
    await t.db.query(
      `UPDATE reservations SET expires_at = now() + interval '200 milliseconds' WHERE order_id = ANY ($1::uuid[])`,
      [ids],
    );
    const later = <T>(f: () => Promise<T>) => new Promise((r) => setTimeout(r, Math.random() * 400)).then(f);
    let sweeping = true;
    const sweeper = (async () => {
      while (sweeping) {
        await sweepOnce(t.db, t.metrics);
        await new Promise((r) => setTimeout(r, 20));
      }
    })();
    await Promise.all(
      ids.flatMap((id) => [
        later(() => t.gql(PAY, { i: { orderId: id, payment: { provider: 'sandbox', token: 'tok_approve' } } })),
        later(() => t.gql(RELEASE, { i: { orderId: id } })),
      ]),
    );
    await new Promise((r) => setTimeout(r, 300));
    sweeping = false;
    await sweeper;
    const { rows } = await t.db.query(`SELECT status FROM orders WHERE id = ANY ($1::uuid[])`, [ids]);
    for (const r of rows) expect(['CONFIRMED', 'CANCELLED', 'EXPIRED']).toContain(r.status);
    await audit();
  });

  it('webhook replays: one signed success delivered 10 times at once, and again later, confirms once', async () => {
    await product('ADV-WH', 2);
    const id = await hold('ADV-WH');
    const body = JSON.stringify({
      id: `evt_adv_${id}`,
      type: 'payment.succeeded',
      orderId: id,
      providerRef: 'sbx_adv_replay',
    });
    const answers = await Promise.all(Array.from({ length: 10 }, () => t.webhook(body, signPayload(body, SECRET))));
    expect(tally(answers.map((a) => a.body.result))).toEqual({ confirmed: 1, duplicate: 9 });
    expect((await t.webhook(body, signPayload(body, SECRET))).body.result).toBe('duplicate');
    // a decline signed later for the same order changes nothing: its units are sold
    const decline = JSON.stringify({
      id: `evt_adv_no_${id}`,
      type: 'payment.failed',
      orderId: id,
      providerRef: 'sbx_adv_replay',
    });
    await t.webhook(decline, signPayload(decline, SECRET));
    expect(await t.inventory('ADV-WH')).toEqual({ available: 1, reserved: 0, sold: 1 });
    // the event names a payment the sandbox never made: the books balance for stock and counters, and the charge audit
    // reports exactly this order as confirmed without money (the audit catches what it is there to catch)
    expect(await auditLedger(t.db, { stocked })).toEqual([]);
    expect(await auditLedger(t.db, { stocked, charges })).toEqual([
      `order ${id} is CONFIRMED with 0 net charges at the processor`,
    ]);
  });
});
