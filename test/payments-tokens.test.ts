import { describe, expect, it } from 'vitest';
import { startPaymentsApp } from './support/payments.js';
import { sweepOnce } from '../orders/sweeper.js';
import { makeHoldsOverdue } from '../kit/holds.js';

const t = await startPaymentsApp();

describe('placeOrder with a payment, one sandbox token at a time (over HTTP)', () => {
  it('tok_approve: CONFIRMED, the unit sold, one charge, the success webhook changes nothing more', async () => {
    await t.product('PAY-OK', 2);
    const r = await t.pay('ok-1', 'PAY-OK', 'tok_approve');
    expect(r.userErrors).toEqual([]);
    expect(r.order).toMatchObject({ status: 'CONFIRMED', reservation: { state: 'SOLD' } });
    expect(await t.inventory('PAY-OK')).toEqual({ available: 1, reserved: 0, sold: 1 });
    await t.eventually(
      async () =>
        (await t.db.query(`SELECT 1 FROM processed_events WHERE event_id LIKE $1`, [`%${r.order!.id}`])).rowCount,
    );
    expect(await t.inventory('PAY-OK')).toEqual({ available: 1, reserved: 0, sold: 1 });
    expect(await t.charges(r.order!.id)).toMatchObject({ requests: 1, charges: 1, voids: 0 });
    const again = await t.pay('ok-1', 'PAY-OK', 'tok_approve');
    expect(again).toMatchObject({ replayed: true, order: { id: r.order!.id, status: 'CONFIRMED' }, userErrors: [] });
    expect(await t.charges(r.order!.id)).toMatchObject({ requests: 1, charges: 1 });
  });

  it('tok_decline: REJECTED with PAYMENT_DECLINED and the unit on sale again at once', async () => {
    await t.product('PAY-NO', 1);
    const r = await t.pay('no-1', 'PAY-NO', 'tok_decline');
    expect(r.order).toMatchObject({
      status: 'REJECTED',
      rejection: { code: 'PAYMENT_DECLINED' },
      reservation: { state: 'RELEASED' },
    });
    expect(r.userErrors.map((e) => e.code)).toEqual(['PAYMENT_DECLINED']);
    expect(await t.inventory('PAY-NO')).toEqual({ available: 1, reserved: 0, sold: 0 });
    expect(await t.availability('PAY-NO')).toEqual({ available: 1, soldOut: false });
    const again = await t.pay('no-1', 'PAY-NO', 'tok_decline');
    expect(again).toMatchObject({ replayed: true, order: { id: r.order!.id, status: 'REJECTED' } });
    expect(again.userErrors[0]?.code).toBe('PAYMENT_DECLINED');
    expect((await t.charges(r.order!.id)).charges).toBe(0);
  });

  it('tok_timeout_approve: AWAITING_PAYMENT with the unit held (sold out to others), then the webhook confirms; charged once', async () => {
    await t.product('PAY-TA', 1);
    t.sandbox.configure({ delayMs: 3_000 }); // a late webhook: it lands well after the client gave up
    const r = await t.pay('ta-1', 'PAY-TA', 'tok_timeout_approve').finally(() => t.sandbox.configure({ delayMs: 0 }));
    expect(r.userErrors).toEqual([]);
    expect(r.order).toMatchObject({ status: 'AWAITING_PAYMENT', reservation: { state: 'AWAITING_PAYMENT' } });
    const id = r.order!.id;
    const inv = await t.inventory('PAY-TA');
    expect(inv.available).toBe(0);
    expect(await t.availability('PAY-TA')).toEqual({ available: 0, soldOut: true });
    const other = await t.pay('ta-other', 'PAY-TA', 'tok_approve');
    expect(other.userErrors[0]?.code).toBe('SOLD_OUT');
    expect(await t.eventually(async () => ((await t.order(id)).status === 'CONFIRMED' ? 1 : 0), 10_000)).toBe(1);
    expect(await t.inventory('PAY-TA')).toEqual({ available: 0, reserved: 0, sold: 1 });
    expect(await t.charges(id)).toMatchObject({ charges: 1, voids: 0 });
    const { rows } = await t.db.query(
      `SELECT payload->>'status' AS s FROM outbox WHERE topic = 'order_status' AND aggregate_key = $1 ORDER BY id`,
      [id],
    );
    // the placement's own status is not relayed (its id is first known from the answer): the changes after it are
    expect(rows.map((x) => x.s)).toEqual(['AWAITING_PAYMENT', 'CONFIRMED']); // never released in between
  });

  it('tok_timeout_approve without its webhook: the reconciler confirms after the deadline', async () => {
    await t.product('PAY-TA2', 1);
    t.sandbox.configure({ webhookUrl: undefined });
    try {
      const r = await t.pay('ta-2', 'PAY-TA2', 'tok_timeout_approve');
      const id = r.order!.id;
      expect(r.order!.status).toBe('AWAITING_PAYMENT');
      expect(await t.reconcile()).toMatchObject({ confirmed: 0 }); // not due yet
      expect(await t.inventory('PAY-TA2')).toEqual({ available: 0, reserved: 1, sold: 0 });
      await t.pastDeadline(id);
      expect(await t.reconcile()).toMatchObject({ confirmed: 1 });
      expect(await t.order(id)).toMatchObject({ status: 'CONFIRMED' });
      expect(await t.inventory('PAY-TA2')).toEqual({ available: 0, reserved: 0, sold: 1 });
      expect((await t.charges(id)).charges).toBe(1);
    } finally {
      t.sandbox.configure({ webhookUrl: `${t.url}/webhooks/payments/sandbox` });
    }
  });

  it('tok_timeout_decline: AWAITING_PAYMENT, then the decline webhook releases the unit', async () => {
    await t.product('PAY-TD', 1);
    const r = await t.pay('td-1', 'PAY-TD', 'tok_timeout_decline');
    const id = r.order!.id;
    expect(['AWAITING_PAYMENT', 'REJECTED']).toContain(r.order!.status);
    expect(await t.eventually(async () => ((await t.order(id)).status === 'REJECTED' ? 1 : 0))).toBe(1);
    expect(await t.order(id)).toMatchObject({ rejection: { code: 'PAYMENT_DECLINED' } });
    expect(await t.inventory('PAY-TD')).toEqual({ available: 1, reserved: 0, sold: 0 });
  });

  it('tells the host after every payment transition, with the SKUs whose units went back (relay wake-up, cache drop)', async () => {
    await t.product('PAY-HOOK', 3);
    const hookCalls = () => t.outboxCalls.filter((c) => c.includes('PAY-HOOK')).length;
    t.outboxCalls.length = 0;
    expect((await t.pay('hook-d', 'PAY-HOOK', 'tok_decline')).order!.status).toBe('REJECTED');
    expect(t.outboxCalls).toEqual([['PAY-HOOK'], ['PAY-HOOK']]); // the claim, then the decline putting the unit back
    t.outboxCalls.length = 0;
    expect((await t.pay('hook-a', 'PAY-HOOK', 'tok_approve')).order!.status).toBe('CONFIRMED');
    // the claim names the SKU; the confirmation names none, whether the client's answer or the processor's success
    // webhook recorded it first (the webhook may win the race: then both call the hook, neither with a SKU)
    expect([
      [['PAY-HOOK'], []], // the client's answer recorded it (the webhook that follows changes nothing: no call)
      [['PAY-HOOK'], [], []], // the webhook recorded it first, then the client's answer found it done
    ]).toContainEqual(t.outboxCalls);
    // a decline that arrives by webhook after the client was told AWAITING_PAYMENT (delivered late on purpose)
    t.outboxCalls.length = 0;
    t.sandbox.configure({ delayMs: 1_500 });
    try {
      const r = await t.pay('hook-w', 'PAY-HOOK', 'tok_timeout_decline');
      expect(r.order!.status).toBe('AWAITING_PAYMENT');
      expect(t.outboxCalls).toEqual([['PAY-HOOK'], []]); // the claim, then the unknown outcome
      const id = r.order!.id;
      expect(
        await t.eventually(async () => ((await t.order(id)).status === 'REJECTED' && hookCalls() === 2 ? 1 : 0)),
      ).toBe(1);
    } finally {
      t.sandbox.configure({ delayMs: 0 });
    }
    // and one the reconciler decides
    t.outboxCalls.length = 0;
    t.sandbox.configure({ webhookUrl: 'http://127.0.0.1:1/nowhere' });
    try {
      const late = await t.pay('hook-r', 'PAY-HOOK', 'tok_timeout_decline');
      expect(late.order!.status).toBe('AWAITING_PAYMENT');
      await t.pastDeadline(late.order!.id);
      await t.reconcile();
      expect((await t.order(late.order!.id)).status).toBe('REJECTED');
      expect(hookCalls()).toBe(2); // the claim, then the reconciled decline
    } finally {
      t.sandbox.configure({ webhookUrl: `${t.url}/webhooks/payments/sandbox` });
    }
  });

  it('tok_slow_<ms> under the timeout: CONFIRMED; over it: AWAITING_PAYMENT until the webhook', async () => {
    await t.product('PAY-SLOW', 2);
    const fast = await t.pay('slow-1', 'PAY-SLOW', 'tok_slow_50');
    expect(fast.order!.status).toBe('CONFIRMED');
    const slow = await t.pay('slow-2', 'PAY-SLOW', 'tok_slow_900');
    expect(slow.order!.status).toBe('AWAITING_PAYMENT');
    expect(await t.eventually(async () => ((await t.order(slow.order!.id)).status === 'CONFIRMED' ? 1 : 0))).toBe(1);
    expect(await t.inventory('PAY-SLOW')).toEqual({ available: 0, reserved: 0, sold: 2 });
  });

  it('tok_error_then_approve: a 5xx is unknown (never declined); the hold stays and the reconciler repeats the authorization with the same key', async () => {
    await t.product('PAY-ERR', 1);
    const r = await t.pay('err-1', 'PAY-ERR', 'tok_error_then_approve');
    const id = r.order!.id;
    expect(r).toMatchObject({ userErrors: [], order: { status: 'AWAITING_PAYMENT' } });
    expect(await t.inventory('PAY-ERR')).toEqual({ available: 0, reserved: 1, sold: 0 });
    const { rows } = await t.db.query(`SELECT state, reason FROM payments WHERE order_id = $1`, [id]);
    expect(rows).toEqual([{ state: 'UNKNOWN', reason: 'http_500' }]);
    // a retry with the same key replays; it never authorizes again
    const again = await t.pay('err-1', 'PAY-ERR', 'tok_error_then_approve');
    expect(again.order).toMatchObject({ id, status: 'AWAITING_PAYMENT' });
    expect((await t.charges(id)).requests).toBe(1);
    // not found at the processor, but the attempt is only hours old: "not found" is not final; the reconciler repeats
    // the authorization with the same key and method (reconcile by identity) and the processor answers it
    await t.pastDeadline(id);
    const rec = await t.reconcile();
    expect(rec).toMatchObject({ expired: 0, errors: 0 });
    // the repeat's success reaches us twice (its answer, and the processor's webhook): whichever lands first confirms
    expect(rec.confirmed + rec.lost).toBe(1);
    await t.eventually(async () => (await t.order(id)).status === 'CONFIRMED');
    expect(await t.order(id)).toMatchObject({ status: 'CONFIRMED', reservation: { state: 'SOLD' } });
    expect(await t.charges(id)).toMatchObject({ requests: 2, charges: 1 });
    const { rows: after } = await t.db.query(`SELECT state, provider_ref FROM payments WHERE order_id = $1`, [id]);
    expect(after[0].provider_ref).toMatch(/^sbx_/); // the payment id, stored as soon as known
  });

  it('an attempt not found after the repeat window (24 h) is final: EXPIRED, the units back', async () => {
    await t.product('PAY-ERR2', 1);
    const r = await t.pay('err-2', 'PAY-ERR2', 'tok_error_then_approve');
    const id = r.order!.id;
    expect(r.order!.status).toBe('AWAITING_PAYMENT');
    await t.pastDeadline(id, { pastRepeatWindow: true });
    expect(await t.reconcile()).toMatchObject({ expired: 1 });
    expect(await t.order(id)).toMatchObject({ status: 'EXPIRED', reservation: { state: 'EXPIRED' } });
    expect(await t.inventory('PAY-ERR2')).toEqual({ available: 1, reserved: 0, sold: 0 });
    expect((await t.charges(id)).requests).toBe(1); // no repeat past the window
  });

  it('asks again later with backoff while the processor says pending', async () => {
    await t.product('PAY-PEND', 1);
    t.sandbox.configure({ webhookUrl: undefined });
    try {
      const r = await t.pay('pend-1', 'PAY-PEND', 'tok_slow_2500');
      const id = r.order!.id;
      expect(r.order!.status).toBe('AWAITING_PAYMENT');
      await t.pastDeadline(id);
      expect(await t.reconcile()).toMatchObject({ pending: 1 });
      expect(await t.reconcile()).toMatchObject({ pending: 0, confirmed: 0 }); // not due again yet
      const { rows } = await t.db.query(
        `SELECT next_check_at > now() AS later, checks FROM payments WHERE order_id = $1`,
        [id],
      );
      expect(rows).toEqual([{ later: true, checks: 1 }]);
      expect(await t.inventory('PAY-PEND')).toEqual({ available: 0, reserved: 1, sold: 0 });
      await t.eventually(async () => (await t.charges(id)).status === 'succeeded', 5_000);
      await t.pastDeadline(id);
      expect(await t.reconcile()).toMatchObject({ confirmed: 1 });
      expect(await t.inventory('PAY-PEND')).toEqual({ available: 0, reserved: 0, sold: 1 });
    } finally {
      t.sandbox.configure({ webhookUrl: `${t.url}/webhooks/payments/sandbox` });
    }
  });

  it('decides 20 overdue payments once each with three reconcilers and a sweeper running at once', async () => {
    await t.product('PAY-MANY', 20);
    t.sandbox.configure({ webhookUrl: undefined });
    let ids: string[];
    try {
      const placed = await Promise.all(
        Array.from({ length: 20 }, (_, i) =>
          t.pay(`many-${i}`, 'PAY-MANY', i % 2 ? 'tok_timeout_approve' : 'tok_timeout_decline'),
        ),
      );
      ids = placed.map((p) => p.order!.id);
    } finally {
      t.sandbox.configure({ webhookUrl: `${t.url}/webhooks/payments/sandbox` });
    }
    for (const id of ids) await t.pastDeadline(id);
    await makeHoldsOverdue(t.db, { skus: ['PAY-MANY'] });
    const [a, b, c] = await Promise.all([t.reconcile(), t.reconcile(), t.reconcile(), sweepOnce(t.db, t.metrics)]);
    expect(a!.confirmed + b!.confirmed + c!.confirmed).toBe(10);
    expect(a!.declined + b!.declined + c!.declined).toBe(10);
    expect(await t.inventory('PAY-MANY')).toEqual({ available: 10, reserved: 0, sold: 10 });
    const { rows } = await t.db.query(
      `SELECT count(*)::int AS n FROM outbox WHERE aggregate_key = ANY ($1::text[]) AND payload->>'status' IN ('CONFIRMED','REJECTED')`,
      [ids!],
    );
    expect(rows[0].n).toBe(20);
  });

  it('counts authorizations by outcome, unknown outcomes and reconciliations in /metrics', async () => {
    const text = await (await fetch(`${t.url}/metrics`)).text();
    expect(text).toMatch(/lastunit_payment_authorizations_total\{outcome="approved"\} [1-9]/);
    expect(text).toMatch(/lastunit_payment_authorizations_total\{outcome="declined"\} [1-9]/);
    expect(text).toMatch(/lastunit_payment_unknown_outcomes_total\{reason="timeout"\} [1-9]/);
    expect(text).toMatch(/lastunit_payment_unknown_outcomes_total\{reason="http_500"\} [1-9]/);
    expect(text).toMatch(/lastunit_payment_reconciliations_total\{result="confirmed"\} [1-9]/);
    expect(text).toMatch(/lastunit_payment_webhooks_total\{result="applied"\} [1-9]/);
  });

  it('refuses an unknown provider or an empty token as INVALID_INPUT, writing nothing', async () => {
    await t.product('PAY-BAD', 1);
    const d = await t.http(
      `mutation($input: PlaceOrderInput!) { placeOrder(input: $input) { order { id } userErrors { code field } } }`,
      {
        input: {
          idempotencyKey: 'bad-1',
          customerId: 'c',
          lines: [{ sku: 'PAY-BAD', quantity: 1 }],
          payment: { provider: 'paypal', token: '' },
        },
      },
    );
    expect(d.placeOrder).toEqual({
      order: null,
      userErrors: [
        { code: 'INVALID_INPUT', field: ['input', 'payment', 'provider'] },
        { code: 'INVALID_INPUT', field: ['input', 'payment', 'token'] },
      ],
    });
    expect(await t.inventory('PAY-BAD')).toEqual({ available: 1, reserved: 0, sold: 0 });
  });

  it('answers IDEMPOTENCY_KEY_REUSED for the same key with another payment token', async () => {
    await t.product('PAY-REUSE', 2);
    await t.pay('reuse-1', 'PAY-REUSE', 'tok_approve');
    const r = await t.pay('reuse-1', 'PAY-REUSE', 'tok_decline');
    expect(r.userErrors.map((e) => e.code)).toEqual(['IDEMPOTENCY_KEY_REUSED']);
    expect(await t.inventory('PAY-REUSE')).toEqual({ available: 1, reserved: 0, sold: 1 });
  });
});
