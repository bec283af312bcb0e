import { describe, expect, it } from 'vitest';
import { startPaymentsApp, trackOpenWork } from './support/payments.js';
import type { Processor } from '../payments/processor.js';

const calls: { op: string; openDbWork: number }[] = [];
// a generous client timeout so a slow token stays in flight however loaded the machine is
const t = await startPaymentsApp({
  timeoutMs: 3_000,
  sandbox: { hangMs: 5_000 },
  wrap: (p, db): Processor => {
    const tracker = trackOpenWork(db);
    const seen =
      <A extends unknown[], R>(op: string, fn: (...a: A) => Promise<R>) =>
      (...a: A) => {
        calls.push({ op, openDbWork: tracker.open() });
        return fn(...a);
      };
    return {
      ...p,
      authorize: seen('authorize', p.authorize),
      lookup: seen('lookup', p.lookup),
      void: seen('void', p.void),
      cancel: seen('cancel', p.cancel),
      capture: seen('capture', p.capture),
    };
  },
});
t.sandbox.configure({ webhookUrl: undefined }); // nothing but the calls under test touches the database

describe('placeOrder with a payment in flight', () => {
  it('answers a retry with the same key IN_PROGRESS (order AWAITING_PAYMENT) and authorizes once', async () => {
    await t.product('FLY-1', 1);
    const first = t.pay('fly-1', 'FLY-1', 'tok_slow_1500');
    await t.eventually(
      async () =>
        (await t.db.query(`SELECT 1 FROM payments p JOIN order_lines l USING (order_id) WHERE l.sku = 'FLY-1'`))
          .rowCount,
    );
    const retries = await Promise.all(Array.from({ length: 5 }, () => t.pay('fly-1', 'FLY-1', 'tok_slow_1500')));
    for (const r of retries) {
      expect(r.replayed).toBe(true);
      expect(r.userErrors.map((e) => e.code)).toEqual(['IN_PROGRESS']);
      expect(r.order?.status).toBe('AWAITING_PAYMENT');
    }
    const done = await first;
    expect(done).toMatchObject({ replayed: false, order: { status: 'CONFIRMED' }, userErrors: [] });
    const after = await t.pay('fly-1', 'FLY-1', 'tok_slow_1500');
    expect(after).toMatchObject({ replayed: true, order: { id: done.order!.id, status: 'CONFIRMED' }, userErrors: [] });
    expect(await t.charges(done.order!.id)).toMatchObject({ requests: 1, charges: 1 });
    expect(await t.inventory('FLY-1')).toEqual({ available: 0, reserved: 0, sold: 1 });
  });

  it('replays (never re-authorizes) a key whose request timed out at the processor', async () => {
    await t.product('FLY-2', 1);
    const first = await t.pay('fly-2', 'FLY-2', 'tok_timeout_approve');
    expect(first.order!.status).toBe('AWAITING_PAYMENT');
    const again = await t.pay('fly-2', 'FLY-2', 'tok_timeout_approve');
    expect(again).toMatchObject({
      replayed: true,
      userErrors: [],
      order: { id: first.order!.id, status: 'AWAITING_PAYMENT' },
    });
    expect((await t.charges(first.order!.id)).requests).toBe(1);
  });

  it('calls the processor (authorize, its repeat, lookup, cancel, void) only while no database transaction or statement is open', async () => {
    calls.length = 0;
    await t.product('FLY-TX', 3);
    await t.pay('tx-ok', 'FLY-TX', 'tok_approve');
    await t.pay('tx-no', 'FLY-TX', 'tok_decline');
    const unknown = await t.pay('tx-unk', 'FLY-TX', 'tok_timeout_approve');
    await t.pastDeadline(unknown.order!.id);
    await t.reconcile(); // the timed-out attempt's id is unknown: the authorization is repeated with its key
    // a payment id known, past the bound on AWAITING_PAYMENT: looked up, then cancelled at the processor
    const slow = await t.pay('tx-slow', 'FLY-TX', 'tok_slow_60000');
    await t.db.query(`UPDATE payments SET provider_ref = 'sbx_known' WHERE order_id = $1`, [slow.order!.id]);
    await t.pastDeadline(slow.order!.id, { pastGiveUp: true });
    await t.reconcile();
    // a compensation to carry out: a success recorded for an order we expire by hand
    await t.db.query(`INSERT INTO compensations (order_id, provider) VALUES ($1, 'sandbox')`, [unknown.order!.id]);
    await t.compensate();
    expect(calls.map((c) => c.op)).toEqual([
      'authorize',
      'authorize',
      'authorize',
      'authorize',
      'authorize',
      'lookup',
      'cancel',
      'void',
    ]);
    for (const c of calls) expect(c).toEqual({ op: c.op, openDbWork: 0 });
  });
});
