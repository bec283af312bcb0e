import { describe, expect, it } from 'vitest';
import { SECRET, startPaymentsApp } from './support/payments.js';
import { signPayload } from '../payments/webhook-signature.js';
import { sweepOnce } from '../orders/sweeper.js';
import { makeHoldsOverdue } from '../kit/holds.js';
import type { Processor } from '../payments/processor.js';

const t = await startPaymentsApp();
const successEvent = (orderId: string, id = `evt_test_${orderId}`) =>
  JSON.stringify({ id, type: 'payment.succeeded', orderId, providerRef: 'sbx_test' });

/** An order left AWAITING_PAYMENT whose success the sandbox recorded but never announced. */
async function awaiting(sku: string, keys: string[]) {
  t.sandbox.configure({ webhookUrl: undefined });
  try {
    const placed = await Promise.all(keys.map((k) => t.pay(k, sku, 'tok_timeout_approve')));
    for (const p of placed) expect(p.order!.status).toBe('AWAITING_PAYMENT');
    return placed.map((p) => p.order!.id);
  } finally {
    t.sandbox.configure({ webhookUrl: `${t.url}/webhooks/payments/sandbox` });
  }
}

let bad = 0;

describe('payment webhooks', () => {
  it('has one effect when the same webhook is delivered 10 times concurrently', async () => {
    await t.product('WH-10', 1);
    const [id] = await awaiting('WH-10', ['wh10']);
    const body = successEvent(id!);
    const answers = await Promise.all(Array.from({ length: 10 }, () => t.webhook(body, signPayload(body, SECRET))));
    expect(answers.map((a) => a.status)).toEqual(Array(10).fill(200));
    expect(answers.map((a) => a.body.result).sort()).toEqual(['confirmed', ...Array(9).fill('duplicate')]);
    expect(await t.inventory('WH-10')).toEqual({ available: 0, reserved: 0, sold: 1 });
    const { rows } = await t.db.query(
      `SELECT count(*)::int AS n FROM outbox WHERE aggregate_key = $1 AND payload->>'status' = 'CONFIRMED'`,
      [id],
    );
    expect(rows[0].n).toBe(1);
  });

  it.each([
    ['a bad signature', (b: string) => signPayload(b, 'not-the-secret')],
    ['a stale timestamp', (b: string) => signPayload(b, SECRET, Math.floor(Date.now() / 1000) - 3600)],
    ['a timestamp from the future', (b: string) => signPayload(b, SECRET, Math.floor(Date.now() / 1000) + 3600)],
    ['no signature', () => null],
    ['a tampered body', (b: string) => signPayload(b.replace('succeeded', 'failed'), SECRET)],
  ])('answers 400 with no effect for %s', async (what, sign) => {
    const sku = `WH-BAD-${++bad}`;
    await t.product(sku, 1);
    const [id] = await awaiting(sku, [`bad-${what}`]);
    const body = successEvent(id!);
    const r = await t.webhook(body, sign(body));
    expect(r.status).toBe(400);
    expect(await t.order(id!)).toMatchObject({ status: 'AWAITING_PAYMENT' });
    expect((await t.db.query(`SELECT 1 FROM processed_events WHERE event_id = $1`, [`evt_test_${id}`])).rowCount).toBe(
      0,
    );
  });

  it('applies each event once when the sandbox delivers every webhook twice, late and out of order', async () => {
    await t.product('WH-ODD', 4);
    t.sandbox.configure({ twice: true, outOfOrder: true, delayMs: 200 });
    try {
      const r = await Promise.all(['odd-1', 'odd-2'].map((k) => t.pay(k, 'WH-ODD', 'tok_approve')));
      const d = await t.pay('odd-3', 'WH-ODD', 'tok_decline');
      await t.eventually(async () =>
        Number(
          (await t.db.query(`SELECT count(*)::int AS n FROM processed_events WHERE event_id LIKE 'evt_payment.%'`))
            .rows[0].n >= 3,
        ),
      );
      await new Promise((res) => setTimeout(res, 300)); // the duplicates arrive too
      for (const x of r) expect(await t.order(x.order!.id)).toMatchObject({ status: 'CONFIRMED' });
      expect(await t.order(d.order!.id)).toMatchObject({ status: 'REJECTED' });
      expect(await t.inventory('WH-ODD')).toEqual({ available: 2, reserved: 0, sold: 2 });
      const { rows } = await t.db.query(`SELECT count(*)::int AS n FROM compensations`);
      expect(rows[0].n).toBe(0);
    } finally {
      t.sandbox.configure({ twice: false, outOfOrder: false, delayMs: 0 });
    }
  });

  it('records one compensation when a success arrives after the order was released, and voids once', async () => {
    await t.product('WH-LATE', 1);
    const [id] = await awaiting('WH-LATE', ['late-1']);
    const noCharge: Processor = { ...t.processor(), lookup: async () => 'not_found' }; // the processor did not see it yet
    await t.pastDeadline(id!, { pastRepeatWindow: true }); // and no repeat of the authorization can find it any more
    expect(await t.reconcile(noCharge)).toMatchObject({ expired: 1 });
    expect(await t.inventory('WH-LATE')).toEqual({ available: 1, reserved: 0, sold: 0 });
    const first = await t.webhook(
      successEvent(id!, 'evt_late_1'),
      signPayload(successEvent(id!, 'evt_late_1'), SECRET),
    );
    const second = await t.webhook(
      successEvent(id!, 'evt_late_2'),
      signPayload(successEvent(id!, 'evt_late_2'), SECRET),
    );
    expect([first.body.result, second.body.result]).toEqual(['compensate', 'noop']);
    expect(await t.order(id!)).toMatchObject({ status: 'EXPIRED' });
    expect(await t.inventory('WH-LATE')).toEqual({ available: 1, reserved: 0, sold: 0 });
    expect(await Promise.all([t.compensate(), t.compensate()])).toSatisfy((n: number[]) => n[0]! + n[1]! === 1);
    expect(await t.compensate()).toBe(0);
    expect(await t.charges(id!)).toMatchObject({ charges: 1, voids: 1, voidRequests: 1 });
    const { rows } = await t.db.query(`SELECT state FROM compensations WHERE order_id = $1`, [id]);
    expect(rows).toEqual([{ state: 'DONE' }]);
  });

  it('lets a success webhook and a reconciler release race on one order for 30 rounds: exactly one outcome each time', async () => {
    await t.product('WH-RACE', 30);
    const ids: string[] = [];
    for (let b = 0; b < 3; b++)
      ids.push(
        ...(await awaiting(
          'WH-RACE',
          Array.from({ length: 10 }, (_, i) => `race-${b}-${i}`),
        )),
      );
    let voided = 0;
    const released: Processor = {
      ...t.processor(),
      lookup: async () => 'not_found',
      void: async (orderId) => {
        voided++;
        await t.processor().void(orderId);
      },
    };
    let releases = 0;
    for (const id of ids) {
      await t.pastDeadline(id, { pastRepeatWindow: true });
      const body = successEvent(id);
      const [wh] = await Promise.all([t.webhook(body, signPayload(body, SECRET)), t.reconcile(released)]);
      const o = await t.order(id);
      const comps = (await t.db.query(`SELECT count(*)::int AS n FROM compensations WHERE order_id = $1`, [id])).rows[0]
        .n;
      if (o.status === 'CONFIRMED') {
        expect(wh.body.result).toBe('confirmed');
        expect(comps).toBe(0);
      } else {
        releases++;
        expect(o.status).toBe('EXPIRED');
        expect(wh.body.result).toBe('compensate');
        expect(comps).toBe(1);
      }
    }
    await t.compensate(released);
    await t.compensate(released);
    expect(voided).toBe(releases);
    for (const id of ids) {
      const c = await t.charges(id);
      expect(c.charges).toBe(1);
      expect(c.voidRequests).toBe((await t.order(id)).status === 'EXPIRED' ? 1 : 0);
    }
    console.log(`webhook/reconciler race: ${30 - releases} confirmed, ${releases} released`);
    const inv = await t.inventory('WH-RACE');
    expect(inv).toEqual({ available: releases, reserved: 0, sold: 30 - releases });
  });
});

describe('holds while a payment is in flight', () => {
  it('answers PAYMENT_IN_FLIGHT to releaseReservation and keeps the hold', async () => {
    await t.product('INF-REL', 1);
    const [id] = await awaiting('INF-REL', ['inf-rel']);
    const r = await t.release(id!);
    expect(r.userErrors.map((e) => e.code)).toEqual(['PAYMENT_IN_FLIGHT']);
    expect(r.order?.status).toBe('AWAITING_PAYMENT');
    expect(await t.inventory('INF-REL')).toEqual({ available: 0, reserved: 1, sold: 0 });
  });

  it('is never swept by the expiry timer, even past expires_at (I7)', async () => {
    await t.product('INF-SWEEP', 1);
    const [id] = await awaiting('INF-SWEEP', ['inf-sweep']);
    await makeHoldsOverdue(t.db, { orderIds: [id!], seconds: 3600 });
    await sweepOnce(t.db, t.metrics);
    expect(await t.order(id!)).toMatchObject({
      status: 'AWAITING_PAYMENT',
      reservation: { state: 'AWAITING_PAYMENT' },
    });
    expect(await t.inventory('INF-SWEEP')).toEqual({ available: 0, reserved: 1, sold: 0 });
  });
});
