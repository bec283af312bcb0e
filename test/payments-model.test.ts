import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { createTestDatabase } from './support/db.js';
import { createMetrics } from '../common/metrics.js';
import { createOrders } from '../orders/orders.js';
import { handlePaymentWebhook } from '../orders/payment-events.js';
import { reconcileOnce } from '../orders/reconciler.js';
import { compensateOnce } from '../orders/compensations.js';
import { captureOnce } from '../orders/capture.js';
import { sweepOnce } from '../orders/sweeper.js';
import { makeHoldsOverdue, makePaymentsDue } from '../kit/holds.js';
import type { LookupStatus, Processor } from '../payments/processor.js';
import { DEFAULTS } from '../kit/config-defaults.js';
import { PAYMENT_SETTINGS } from './support/payments.js';

// A model-based test: random sequences of place, retry, reused key, release, expire, approve, decline, timeout,
// duplicate and late webhooks, blind and informed reconciliation, payOrder attempts (another card after a decline),
// confirmOrder (with re-claims after expiry), capture and cancelOrder, plus races of several of these on one order run
// concurrently, against the real domain and PostgreSQL and against a tiny model; I1-I8 and the model are checked after
// every step (after a race the model takes the outcome the database chose and the invariants decide).

const tdb = await createTestDatabase();
afterAll(() => tdb.drop());
const db = tdb.db;
const metrics = createMetrics();

/**
 * A scripted processor: outcomes by token, recorded per payment key like a real one (idempotent by key: a repeat of an
 * authorization answers the recorded payment and never charges again), no network.
 */
const charges = new Map<string, { status: LookupStatus; voids: number; charges: number; captures: number }>();
/** capture calls that should never have happened (a declined payment, or one already given back) */
const badCaptures: string[] = [];
const processor: Processor = {
  name: 'model',
  async authorize({ orderId, key, token }) {
    const k = key ?? orderId;
    const ok = token.endsWith('approve');
    const prior = charges.get(k);
    if (!prior) charges.set(k, { status: ok ? 'succeeded' : 'failed', voids: 0, charges: ok ? 1 : 0, captures: 0 });
    else if (!token.startsWith('timeout')) throw new Error(`authorized twice outside a repeat: ${k}`);
    const c = charges.get(k)!;
    if (token.startsWith('timeout') && !prior) return { outcome: 'unknown', reason: 'timeout' };
    return c.status === 'succeeded'
      ? { outcome: 'approved', providerRef: `ref_${k}` }
      : { outcome: 'declined', reason: 'card_declined' };
  },
  async lookup(key) {
    return charges.get(key)?.status ?? 'not_found';
  },
  async void(key) {
    charges.get(key)!.voids++;
  },
  async cancel(key) {
    const c = charges.get(key);
    return c ? (c.status === 'succeeded' ? 'succeeded' : 'failed') : 'canceled';
  },
  async capture(key) {
    const c = charges.get(key);
    if (c?.status !== 'succeeded' || c.voids > 0) badCaptures.push(key);
    else c.captures = 1; // idempotent at the processor
  },
  async verifyWebhook(raw) {
    const e = JSON.parse(raw);
    return {
      id: e.id,
      type: e.type,
      orderId: e.orderId,
      paymentKey: e.paymentKey,
      outcome: e.type === 'ok' ? 'approved' : 'declined',
    };
  },
};
// asked before the processor saw the charge, past the window in which a repeat of the authorization could still find it
const blind: Processor = { ...processor, lookup: async () => 'not_found' };
const orders = createOrders({
  db,
  metrics,
  // one customer places every order of the model: the hold limit (I14, test/fair-drops.test.ts) is off here
  settings: { ...DEFAULTS.orders, maxLines: 5, maxLineQuantity: 5, maxActiveHolds: 0 },
  payments: { processor, settings: { ...PAYMENT_SETTINGS, deadlineSeconds: 60, recoverySeconds: 3600 } },
});
const caller = { clientId: 'model-client' };

const TOKENS = ['approve', 'decline', 'timeout_approve', 'timeout_decline', null] as const;
const STOCK = 3;
const PAY_TOKENS = ['approve', 'decline', 'timeout_approve'] as const;
type Action =
  | { a: 'pay'; k: number; t: number }
  | { a: 'confirm'; k: number }
  | { a: 'cancel'; k: number }
  | { a: 'capture' }
  | { a: 'race'; k: number; ops: number[] }
  | { a: 'place'; k: number }
  | { a: 'reuse'; k: number }
  | { a: 'release'; k: number }
  | { a: 'expire' }
  | { a: 'webhook'; k: number; copies: number }
  | { a: 'reconcile'; blind: boolean }
  | { a: 'compensate' };
const action: fc.Arbitrary<Action> = fc.oneof(
  { weight: 4, arbitrary: fc.record({ a: fc.constant('place' as const), k: fc.nat(9) }) },
  fc.record({ a: fc.constant('reuse' as const), k: fc.nat(9) }),
  { weight: 2, arbitrary: fc.record({ a: fc.constant('release' as const), k: fc.nat(9) }) },
  fc.record({ a: fc.constant('expire' as const) }),
  {
    weight: 3,
    arbitrary: fc.record({ a: fc.constant('webhook' as const), k: fc.nat(9), copies: fc.integer({ min: 1, max: 3 }) }),
  },
  { weight: 2, arbitrary: fc.record({ a: fc.constant('reconcile' as const), blind: fc.boolean() }) },
  fc.record({ a: fc.constant('compensate' as const) }),
  {
    weight: 3,
    arbitrary: fc.record({ a: fc.constant('pay' as const), k: fc.nat(9), t: fc.nat(PAY_TOKENS.length - 1) }),
  },
  { weight: 2, arbitrary: fc.record({ a: fc.constant('confirm' as const), k: fc.nat(9) }) },
  fc.record({ a: fc.constant('cancel' as const), k: fc.nat(9) }),
  fc.record({ a: fc.constant('capture' as const) }),
  {
    weight: 2,
    arbitrary: fc.record({
      a: fc.constant('race' as const),
      k: fc.nat(9),
      ops: fc.array(fc.nat(4), { minLength: 2, maxLength: 4 }),
    }),
  },
);

type ModelOrder = {
  id: string;
  status: string;
  qty: number;
  token: (typeof TOKENS)[number];
  /** processor keys of its attempts, oldest first (the order id for attempt 1) */
  keys: string[];
  /** its latest attempt came from payOrder: a decline puts the hold back instead of rejecting */
  payMode: boolean;
  /** it had a hold (not refused at placement) */
  held: boolean;
  /** it was paid at some point (so a cancelled one is never re-claimed) */
  paidEver: boolean;
  confirmedRef: string | null;
  refundDue: boolean;
};
const latestKey = (o: ModelOrder) => o.keys.at(-1);
let run = 0;

async function check(sku: string, model: Map<number, ModelOrder>, available: number) {
  const inv = (await db.query(`SELECT available, reserved, sold FROM inventory WHERE sku = $1`, [sku])).rows[0];
  // I1, I2: never negative, units only move between columns
  expect(Math.min(inv.available, inv.reserved, inv.sold)).toBeGreaterThanOrEqual(0);
  expect(inv.available + inv.reserved + inv.sold).toBe(STOCK);
  expect(inv.available).toBe(available);
  const held = await db.query(
    `SELECT coalesce(sum(quantity) FILTER (WHERE state IN ('HELD','AWAITING_PAYMENT')), 0)::int AS reserved,
            coalesce(sum(quantity) FILTER (WHERE state = 'SOLD'), 0)::int AS sold FROM reservations WHERE sku = $1`,
    [sku],
  );
  expect(held.rows[0]).toEqual({ reserved: inv.reserved, sold: inv.sold });
  const PAIR: Record<string, string[]> = {
    RESERVED: ['HELD'],
    AWAITING_PAYMENT: ['AWAITING_PAYMENT'],
    CONFIRMED: ['SOLD'],
    CANCELLED: ['RELEASED'],
    REJECTED: ['RELEASED'],
    EXPIRED: ['EXPIRED'],
  };
  for (const o of model.values()) {
    const row = (
      await db.query(
        `SELECT o.status, r.state, r.released_reason FROM orders o LEFT JOIN reservations r ON r.order_id = o.id WHERE o.id = $1`,
        [o.id],
      )
    ).rows[0];
    expect(row.status).toBe(o.status); // the model
    if (row.state) expect(PAIR[row.status]).toContain(row.state); // I6: one consistent state per order
    // I7: a hold is released by the timer only when no payment of it can succeed any more (never while AWAITING_PAYMENT;
    // a payOrder decline gives the hold back to HELD, and then the timer may take it)
    if (row.released_reason === 'hold expired') for (const k of o.keys) expect(charges.get(k)?.status).toBe('failed');
    // I8: at most one confirmation event and one compensation per order
    const once = await db.query(
      `SELECT (SELECT count(*) FROM outbox WHERE aggregate_key = $1::text AND payload->>'status' = 'CONFIRMED')::int AS confirmed,
              (SELECT count(*) FROM compensations WHERE order_id = $1::uuid)::int AS comps`,
      [o.id],
    );
    expect(once.rows[0].confirmed).toBeLessThanOrEqual(1);
    expect(once.rows[0].comps).toBeLessThanOrEqual(1);
    if (once.rows[0].comps) expect(o.keys.some((k) => charges.get(k)?.status === 'succeeded')).toBe(true); // compensation only for real money
    for (const k of o.keys) {
      expect(charges.get(k)?.voids ?? 0).toBeLessThanOrEqual(1); // never voided twice
      expect(charges.get(k)?.captures ?? 0).toBeLessThanOrEqual(1); // never captured twice
    }
  }
  expect(badCaptures).toEqual([]); // never a capture of a declined or given-back payment
  // I12/I14-style bookkeeping: no payment still marked to capture on an order that is not CONFIRMED
  const stray = await db.query(
    `SELECT p.order_id FROM payments p JOIN orders o ON o.id = p.order_id JOIN order_lines l ON l.order_id = o.id
      WHERE l.sku = $1 AND p.capture_state = 'PENDING' AND o.status <> 'CONFIRMED'`,
    [sku],
  );
  expect(stray.rows).toEqual([]);
}

describe('payments against a model', () => {
  it('keeps I1-I8 and the model under random sequences of place, retry, release, expire and payment events', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(action, { minLength: 1, maxLength: 25 }), async (actions) => {
        const sku = `MODEL-${++run}`;
        await db.query(`INSERT INTO products (sku, name, price_amount, currency) VALUES ($1, $1, 100, 'USD')`, [sku]);
        await db.query(`INSERT INTO inventory (sku, available) VALUES ($1, $2)`, [sku, STOCK]);
        const model = new Map<number, ModelOrder>();
        let available = STOCK;
        const qty = (k: number) => 1 + (k % 2);
        const input = (k: number, token: string | null) => ({
          idempotencyKey: `${sku}-k${k}`,
          customerId: 'cust',
          lines: [{ sku, quantity: qty(k) }],
          payment: token ? { provider: 'model', token } : null,
        });
        const release = (o: ModelOrder, to: string) => {
          o.status = to;
          available += o.qty;
        };
        for (const act of actions) {
          const o = 'k' in act ? model.get(act.k) : undefined;
          switch (act.a) {
            case 'place': {
              const token = TOKENS[act.k % TOKENS.length]!;
              const r = await orders.placeOrder(caller, input(act.k, token));
              if (o) {
                expect(r.order?.id).toBe(o.id); // retry: same order, current state
                expect(r.replayed).toBe(true);
                break;
              }
              const q = qty(act.k);
              const m: ModelOrder = {
                id: r.order!.id,
                status: 'REJECTED',
                qty: q,
                token,
                keys: [],
                payMode: false,
                held: false,
                paidEver: false,
                confirmedRef: null,
                refundDue: false,
              };
              model.set(act.k, m);
              if (available < q) break;
              available -= q;
              m.held = true;
              if (token) m.keys.push(m.id);
              if (token === 'approve') m.paidEver = true;
              m.status =
                token === null
                  ? 'RESERVED'
                  : token === 'approve'
                    ? 'CONFIRMED'
                    : token === 'decline'
                      ? 'REJECTED'
                      : 'AWAITING_PAYMENT';
              if (m.status === 'REJECTED') available += q;
              expect(r.order?.status).toBe(m.status);
              break;
            }
            case 'reuse': {
              if (!o) break;
              const r = await orders.placeOrder(caller, input(act.k, 'other_token'));
              expect(r.ok ? [] : r.errors.map((e) => e.code)).toEqual(['IDEMPOTENCY_KEY_REUSED']); // I5: refused, nothing executed
              break;
            }
            case 'release': {
              if (!o) break;
              const r = await orders.releaseReservation(caller, { orderId: o.id });
              if (o.status === 'RESERVED') release(o, 'CANCELLED');
              if (o.status === 'AWAITING_PAYMENT')
                expect(r.ok ? [] : r.errors.map((e) => e.code)).toEqual(['PAYMENT_IN_FLIGHT']);
              break;
            }
            case 'expire':
              await makeHoldsOverdue(db, { skus: [sku] });
              await sweepOnce(db, metrics);
              for (const m of model.values()) if (m.status === 'RESERVED') release(m, 'EXPIRED');
              break;
            case 'webhook': {
              const key = o && latestKey(o);
              const c = key && charges.get(key);
              if (!o || !c) break;
              const body = JSON.stringify({
                id: `evt_${key}`,
                type: c.status === 'succeeded' ? 'ok' : 'fail',
                orderId: o.id,
                paymentKey: key,
              });
              await Promise.all(
                Array.from({ length: act.copies }, () =>
                  handlePaymentWebhook({ db, metrics, processors: [processor] }, 'model', body, new Headers()),
                ),
              );
              if (o.status === 'AWAITING_PAYMENT') {
                if (c.status === 'succeeded') {
                  o.status = 'CONFIRMED';
                  o.paidEver = true;
                } else if (o.payMode) o.status = 'RESERVED';
                else release(o, 'REJECTED');
              }
              break;
            }
            case 'reconcile':
              await makePaymentsDue(db, { skus: [sku], pastRepeatWindow: act.blind });
              await reconcileOnce({ db, metrics, processor: act.blind ? blind : processor });
              for (const m of model.values()) {
                if (m.status !== 'AWAITING_PAYMENT') continue;
                const s = act.blind ? 'not_found' : charges.get(latestKey(m)!)?.status;
                if (s === 'succeeded') {
                  m.status = 'CONFIRMED';
                  m.paidEver = true;
                } else if (m.payMode)
                  m.status = 'RESERVED'; // payOrder: the hold goes back to HELD
                else release(m, s === 'failed' ? 'REJECTED' : 'EXPIRED');
              }
              break;
            case 'pay': {
              if (!o) break;
              const token = PAY_TOKENS[act.t]!;
              const r = await orders.payOrder(caller, { orderId: o.id, payment: { provider: 'model', token } });
              const codes = r.ok ? [] : r.errors.map((e) => e.code);
              if (o.status !== 'RESERVED') {
                const expected =
                  o.status === 'AWAITING_PAYMENT'
                    ? 'PAYMENT_IN_FLIGHT'
                    : o.status === 'EXPIRED'
                      ? 'RESERVATION_EXPIRED'
                      : 'ALREADY_FINAL';
                expect(codes).toEqual([expected]);
                break;
              }
              const n = o.keys.length + 1;
              o.keys.push(n === 1 ? o.id : `${o.id}:${n}`);
              o.payMode = true;
              if (token === 'approve') {
                o.status = 'CONFIRMED';
                o.paidEver = true;
              } else if (token === 'decline') expect(codes).toEqual(['PAYMENT_DECLINED']);
              else o.status = 'AWAITING_PAYMENT';
              expect(r.order?.status).toBe(o.status);
              break;
            }
            case 'confirm': {
              if (!o) break;
              const ref = `ref-${act.k}`;
              const r = await orders.confirmOrder(caller, { orderId: o.id, paymentReference: ref });
              const codes = r.ok ? [] : r.errors.map((e) => e.code);
              if (o.refundDue) expect(codes).toEqual(['RESERVATION_EXPIRED']);
              else if (o.status === 'CONFIRMED') expect(codes).toEqual(o.confirmedRef === ref ? [] : ['ALREADY_FINAL']);
              else if (o.status === 'AWAITING_PAYMENT') expect(codes).toEqual(['PAYMENT_IN_FLIGHT']);
              else if (o.status === 'RESERVED' || (o.held && !o.paidEver && available >= o.qty)) {
                expect(codes).toEqual([]);
                if (o.status !== 'RESERVED') available -= o.qty; // re-claimed by the conditional write
                o.status = 'CONFIRMED';
                o.paidEver = true;
                o.confirmedRef = ref;
              } else {
                expect(codes).toEqual(['RESERVATION_EXPIRED']);
                o.refundDue = true;
              }
              break;
            }
            case 'cancel': {
              if (!o) break;
              const r = await orders.cancelOrder({ orderId: o.id });
              const codes = r.ok ? [] : r.errors.map((e) => e.code);
              if (o.status === 'CONFIRMED') release(o, 'CANCELLED');
              else expect(codes).toEqual(o.status === 'CANCELLED' ? [] : ['ALREADY_FINAL']);
              break;
            }
            case 'capture':
              await captureOnce({ db, metrics, processor });
              break;
            case 'race': {
              // several transitions on one order at once: the guarded writes pick an order; the model follows the database
              if (!o) break;
              const OPS = [
                () => orders.payOrder(caller, { orderId: o.id, payment: { provider: 'model', token: 'approve' } }),
                () => orders.confirmOrder(caller, { orderId: o.id, paymentReference: `ref-${act.k}` }),
                () => orders.releaseReservation(caller, { orderId: o.id }),
                () => orders.cancelOrder({ orderId: o.id }),
                () => orders.payOrder(caller, { orderId: o.id, payment: { provider: 'model', token: 'decline' } }),
              ];
              await Promise.all(act.ops.map((i) => OPS[i]!()));
              const row = (
                await db.query(
                  `SELECT o.status, (SELECT available FROM inventory WHERE sku = $2) AS available,
                        coalesce((SELECT array_agg(coalesce(idem_key, '') ORDER BY attempt) FROM payments WHERE order_id = o.id AND idem_key IS NOT NULL), '{}') AS keys,
                        (SELECT on_decline FROM payments WHERE order_id = o.id ORDER BY attempt DESC LIMIT 1) AS on_decline,
                        EXISTS (SELECT 1 FROM payments WHERE order_id = o.id AND state IN ('AUTHORIZED', 'EXTERNAL')) AS paid,
                        (SELECT provider_ref FROM payments WHERE order_id = o.id AND state = 'EXTERNAL' LIMIT 1) AS ref,
                        EXISTS (SELECT 1 FROM caller_refunds WHERE order_id = o.id) AS refund_due
                   FROM orders o WHERE o.id = $1`,
                  [o.id, sku],
                )
              ).rows[0];
              Object.assign(o, {
                status: row.status,
                keys: row.keys,
                payMode: row.on_decline === 'HOLD',
                paidEver: row.paid,
                confirmedRef: row.ref,
                refundDue: row.refund_due,
              });
              available = row.available;
              break;
            }
            case 'compensate':
              await compensateOnce({ db, metrics, processor });
              break;
          }
          await check(sku, model, available);
        }
      }),
      {
        numRuns: 60,
        // the paths that matter most, always run first: a late success after a blind release, duplicates, a release race
        examples: [
          [
            [
              { a: 'place', k: 2 },
              { a: 'reconcile', blind: true },
              { a: 'webhook', k: 2, copies: 3 },
              { a: 'compensate' },
              { a: 'compensate' },
              { a: 'webhook', k: 2, copies: 1 },
            ],
          ],
          [
            [
              { a: 'place', k: 4 },
              { a: 'release', k: 4 },
              { a: 'place', k: 4 },
              { a: 'place', k: 2 },
              { a: 'release', k: 2 },
              { a: 'expire' },
              { a: 'webhook', k: 2, copies: 2 },
            ],
          ],
          [
            [
              { a: 'place', k: 3 },
              { a: 'reuse', k: 3 },
              { a: 'reconcile', blind: false },
              { a: 'place', k: 0 },
              { a: 'place', k: 1 },
              { a: 'webhook', k: 3, copies: 2 },
            ],
          ],
        ],
      },
    );
    // the runs reached the main end states (random seeds: the rarer ones are logged, not required)
    const { rows } = await db.query(`SELECT status, count(*)::int AS n FROM orders GROUP BY status`);
    const seen = Object.fromEntries(rows.map((r) => [r.status, r.n]));
    const comps = (
      await db.query(
        `SELECT count(*)::int AS n, count(*) FILTER (WHERE state = 'DONE')::int AS done FROM compensations`,
      )
    ).rows[0];
    console.log('model runs reached', JSON.stringify(seen), 'compensations', JSON.stringify(comps));
    for (const s of ['CONFIRMED', 'REJECTED', 'EXPIRED', 'CANCELLED']) expect(seen[s] ?? 0).toBeGreaterThan(0);
    expect(comps.done).toBeGreaterThan(0);
  });
});
