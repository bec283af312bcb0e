// The Stripe adapter through the whole pipeline (issue 10 item 5): a local server that keeps PaymentIntents and answers
// Stripe's documented bodies (https://docs.stripe.com/api/payment_intents/object), webhooks signed with
// stripe.webhooks.generateTestHeaderString. Reconciliation goes by identity: the PaymentIntent id is stored as soon as
// Stripe names it and retrieved by id; a timed-out create is repeated with the same Idempotency-Key; Search is never used.
import http from 'node:http';
import { afterAll, describe, expect, it } from 'vitest';
import Stripe from 'stripe';
import { stripeProcessor } from '../payments/stripe.js';
import { startTestApp, KEYS } from './support/app.js';
import { reconcileOnce } from '../orders/reconciler.js';
import { captureOnce } from '../orders/capture.js';
import { compensateOnce } from '../orders/compensations.js';
import { makePaymentsDue } from '../kit/holds.js';
import { DEFAULTS } from '../kit/config-defaults.js';
import { PAYMENT_SETTINGS } from './support/payments.js';

type PI = {
  id: string;
  object: 'payment_intent';
  amount: number;
  currency: string;
  status: string;
  capture_method: 'manual';
  client_secret: string;
  metadata: Record<string, string>;
  next_action: unknown;
  last_payment_error: unknown;
};
const intents = new Map<string, PI>();
const byKey = new Map<string, string>();
const seen: { method: string; path: string; idempotencyKey?: string }[] = [];
let hangOnce = new Set<string>();
let n = 0;
const server = http.createServer((req, res) => {
  let body = '';
  req.on('data', (d) => (body += d));
  req.on('end', () => {
    const url = new URL(req.url ?? '/', 'http://stripe');
    const key = req.headers['idempotency-key'] as string | undefined;
    seen.push({ method: req.method!, path: url.pathname, idempotencyKey: key });
    const form = new URLSearchParams(body);
    const send = (status: number, obj: unknown) =>
      res.writeHead(status, { 'content-type': 'application/json', 'request-id': 'req_local' }).end(JSON.stringify(obj));
    const m = /^\/v1\/payment_intents\/([^/]+)(?:\/(cancel|capture))?$/.exec(url.pathname);
    if (req.method === 'POST' && url.pathname === '/v1/payment_intents') {
      if (key && byKey.has(key)) return send(200, intents.get(byKey.get(key)!)); // Stripe replays the same object for the same key
      const pm = form.get('payment_method') ?? '';
      const id = `pi_local_${++n}`;
      const pi: PI = {
        id,
        object: 'payment_intent',
        amount: Number(form.get('amount')),
        currency: form.get('currency')!,
        capture_method: 'manual',
        client_secret: `${id}_secret_local`,
        metadata: { order_id: form.get('metadata[order_id]')!, payment_key: form.get('metadata[payment_key]')! },
        status: pm === 'pm_3ds' ? 'requires_action' : pm === 'pm_processing' ? 'processing' : 'requires_capture',
        next_action: pm === 'pm_3ds' ? { type: 'use_stripe_sdk', use_stripe_sdk: {} } : null,
        last_payment_error: null,
      };
      intents.set(id, pi);
      if (key) byKey.set(key, id);
      if (hangOnce.has(pm)) {
        hangOnce.delete(pm);
        return; // the intent exists, the answer never comes: the caller's timeout decides
      }
      return send(200, pi);
    }
    if (url.pathname === '/v1/payment_intents/search')
      return send(200, { object: 'search_result', data: [], has_more: false, url: '/v1/payment_intents/search' });
    if (m && intents.has(m[1]!)) {
      const pi = intents.get(m[1]!)!;
      if (req.method === 'GET') return send(200, pi);
      if (m[2] === 'cancel') pi.status = 'canceled';
      if (m[2] === 'capture') pi.status = 'succeeded';
      return send(200, pi);
    }
    if (req.method === 'POST' && url.pathname === '/v1/refunds')
      return send(200, {
        id: `re_local_${++n}`,
        object: 'refund',
        status: 'succeeded',
        payment_intent: form.get('payment_intent'),
        amount: intents.get(form.get('payment_intent')!)?.amount,
      });
    send(404, { error: { type: 'invalid_request_error', message: 'unrouted' } });
  });
});
await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
afterAll(() => {
  server.closeAllConnections();
  server.close();
});

const WHSEC = 'whsec_local_stripe_flows';
const processor = stripeProcessor({
  secretKey: 'sk_test_local',
  webhookSecret: WHSEC,
  timeoutMs: 500,
  webhookToleranceSeconds: DEFAULTS.webhooks.toleranceSeconds,
  api: { host: '127.0.0.1', port: (server.address() as { port: number }).port, protocol: 'http' },
});
const t = await startTestApp(
  {},
  { processor, settings: { ...PAYMENT_SETTINGS, deadlineSeconds: 60, recoverySeconds: 10 } },
);
const deps = { db: t.db, metrics: t.metrics, processor };

const FIELDS = `id status reservation { state } payment { state reference captured nextAction { type clientSecret } }`;
type Order = {
  id: string;
  status: string;
  payment: {
    state: string;
    reference: string | null;
    captured: boolean;
    nextAction: { type: string; clientSecret: string } | null;
  } | null;
};
let k = 0;
async function place(sku: string, pm: string) {
  const r = await t.gql(
    `mutation($input: PlaceOrderInput!) { placeOrder(input: $input) { order { ${FIELDS} } nextAction { type clientSecret } userErrors { code } } }`,
    {
      input: {
        idempotencyKey: `sf-${++k}`,
        customerId: `sf-${k}`,
        lines: [{ sku, quantity: 1 }],
        payment: { provider: 'stripe', token: pm },
      },
    },
  );
  return r.body.data.placeOrder as {
    order: Order;
    nextAction: { type: string; clientSecret: string } | null;
    userErrors: { code: string }[];
  };
}
const order = async (id: string) =>
  (await t.gql(`query($id: ID!) { order(id: $id) { ${FIELDS} } }`, { id })).body.data.order as Order;
/** Stripe's event for an object, signed the way Stripe signs it. */
async function webhook(type: string, object: object) {
  const payload = JSON.stringify({ id: `evt_${++n}`, object: 'event', type, data: { object } });
  const res = await t.app.request('/webhooks/payments/stripe', {
    method: 'POST',
    headers: { 'stripe-signature': Stripe.webhooks.generateTestHeaderString({ payload, secret: WHSEC }) },
    body: payload,
  });
  return ((await res.json()) as { result: string }).result;
}
const piOf = (o: Order) => intents.get(o.payment!.reference!)!;

describe('Stripe, through the pipeline', () => {
  it('requires_action: AWAITING_PAYMENT with the client secret for Stripe.js; payment_intent.succeeded confirms; capture by id', async () => {
    await t.product('SF-3DS', 1);
    const r = await place('SF-3DS', 'pm_3ds');
    expect(r.order).toMatchObject({ status: 'AWAITING_PAYMENT', payment: { state: 'ACTION_REQUIRED' } });
    expect(r.nextAction).toEqual({
      type: 'use_stripe_sdk',
      clientSecret: `${r.order.payment!.reference}_secret_local`,
    });
    const pi = piOf(r.order);
    pi.status = 'requires_capture'; // the shopper authenticated with Stripe.js
    expect(await webhook('payment_intent.succeeded', pi)).toBe('confirmed');
    expect(await order(r.order.id)).toMatchObject({
      status: 'CONFIRMED',
      payment: { state: 'AUTHORIZED', captured: false },
    });
    expect(await captureOnce(deps)).toBe(1);
    expect(seen.filter((s) => s.path === `/v1/payment_intents/${pi.id}/capture`)).toEqual([
      { method: 'POST', path: `/v1/payment_intents/${pi.id}/capture`, idempotencyKey: `capture-${r.order.id}` },
    ]);
    expect(await order(r.order.id)).toMatchObject({ payment: { captured: true } });
  });

  it('payment_intent.requires_action then .payment_failed: the next action shown, then REJECTED with the units back', async () => {
    await t.product('SF-FAIL', 1);
    const r = await place('SF-FAIL', 'pm_processing');
    expect(r.order).toMatchObject({ status: 'AWAITING_PAYMENT', payment: { state: 'UNKNOWN' } });
    const pi = piOf(r.order);
    Object.assign(pi, {
      status: 'requires_action',
      next_action: { type: 'redirect_to_url', redirect_to_url: { url: 'https://hooks.stripe.com/3ds' } },
    });
    expect(await webhook('payment_intent.requires_action', pi)).toBe('action_required');
    expect(await order(r.order.id)).toMatchObject({
      payment: { state: 'ACTION_REQUIRED', nextAction: { type: 'redirect_to_url' } },
    });
    Object.assign(pi, { status: 'requires_payment_method', last_payment_error: { code: 'authentication_required' } });
    expect(await webhook('payment_intent.payment_failed', pi)).toBe('rejected');
    expect(await order(r.order.id)).toMatchObject({ status: 'REJECTED' });
    expect(await t.inventory('SF-FAIL')).toEqual({ available: 1, reserved: 0, sold: 0 });
  });

  it('payment_intent.canceled releases an AWAITING_PAYMENT hold (the processor confirmed the cancel)', async () => {
    await t.product('SF-CANCEL', 1);
    const r = await place('SF-CANCEL', 'pm_processing');
    const pi = piOf(r.order);
    pi.status = 'canceled';
    expect(await webhook('payment_intent.canceled', pi)).toBe('cancelled');
    expect(await order(r.order.id)).toMatchObject({ status: 'EXPIRED', payment: { state: 'CANCELLED' } });
    expect(await t.inventory('SF-CANCEL')).toEqual({ available: 1, reserved: 0, sold: 0 });
  });

  it('reconciles by identity: the stored PaymentIntent id is retrieved, Search is never called', async () => {
    await t.product('SF-ID', 1);
    const r = await place('SF-ID', 'pm_processing');
    const pi = piOf(r.order);
    pi.status = 'requires_capture';
    seen.length = 0;
    await makePaymentsDue(t.db, { orderIds: [r.order.id] });
    expect(await reconcileOnce(deps)).toMatchObject({ confirmed: 1 });
    expect(seen.map((s) => `${s.method} ${s.path}`)).toEqual([`GET /v1/payment_intents/${pi.id}`]);
  });

  it('a create that timed out is repeated with the same Idempotency-Key: one PaymentIntent, confirmed, no search', async () => {
    await t.product('SF-HANG', 1);
    hangOnce = new Set(['pm_card_visa']);
    const r = await place('SF-HANG', 'pm_card_visa');
    expect(r.order).toMatchObject({ status: 'AWAITING_PAYMENT', payment: { state: 'UNKNOWN', reference: null } });
    seen.length = 0;
    await makePaymentsDue(t.db, { orderIds: [r.order.id] });
    expect(await reconcileOnce(deps)).toMatchObject({ confirmed: 1 });
    expect(seen).toEqual([{ method: 'POST', path: '/v1/payment_intents', idempotencyKey: r.order.id }]);
    expect([...intents.values()].filter((p) => p.metadata.order_id === r.order.id)).toHaveLength(1);
    expect(await order(r.order.id)).toMatchObject({
      status: 'CONFIRMED',
      payment: { reference: expect.stringMatching(/^pi_local_/) },
    });
  });

  it('cancelOrder after capture refunds once by id; charge.refunded is matched by its payment_intent', async () => {
    await t.product('SF-REFUND', 1);
    const r = await place('SF-REFUND', 'pm_card_visa');
    expect(r.order.status).toBe('CONFIRMED');
    await captureOnce(deps);
    const c = await t.gql(
      `mutation($i: CancelOrderInput!) { cancelOrder(input: $i) { order { status } userErrors { code } } }`,
      { i: { orderId: r.order.id } },
      KEYS.admin,
    );
    expect(c.body.data.cancelOrder).toEqual({ order: { status: 'CANCELLED' }, userErrors: [] });
    seen.length = 0;
    expect(await compensateOnce(deps)).toBe(1);
    // the worker again, twice at once: nothing left to refund, no second request
    expect(await Promise.all([compensateOnce(deps), compensateOnce(deps)])).toEqual([0, 0]);
    const pi = piOf(r.order);
    expect(seen.filter((s) => s.path === '/v1/refunds')).toEqual([
      { method: 'POST', path: '/v1/refunds', idempotencyKey: `refund-${r.order.id}` },
    ]);
    expect((await t.db.query(`SELECT state FROM compensations WHERE order_id = $1`, [r.order.id])).rows).toEqual([
      { state: 'DONE' },
    ]);
    expect(
      await webhook('charge.refunded', {
        id: 'ch_local_1',
        object: 'charge',
        payment_intent: pi.id,
        refunded: true,
        metadata: {},
      }),
    ).toBe('noop'); // already done
    expect(seen.some((s) => s.path.includes('search'))).toBe(false);
  });

  it('charge.refunded arriving before the worker marks the pending compensation done, once', async () => {
    await t.product('SF-REFUND2', 1);
    const r = await place('SF-REFUND2', 'pm_card_visa');
    await t.gql(
      `mutation($i: CancelOrderInput!) { cancelOrder(input: $i) { userErrors { code } } }`,
      { i: { orderId: r.order.id } },
      KEYS.admin,
    );
    const charge = {
      id: 'ch_local_2',
      object: 'charge',
      payment_intent: piOf(r.order).id,
      refunded: true,
      metadata: {},
    };
    expect(await webhook('charge.refunded', charge)).toBe('refunded');
    expect((await t.db.query(`SELECT state FROM compensations WHERE order_id = $1`, [r.order.id])).rows).toEqual([
      { state: 'DONE' },
    ]);
    expect(await webhook('charge.refunded', charge)).toBe('noop');
    expect(await compensateOnce(deps)).toBe(0); // nothing left to give back
  });
});
