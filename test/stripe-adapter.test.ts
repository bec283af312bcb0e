import http from 'node:http';
import { afterAll, describe, expect, it } from 'vitest';
import Stripe from 'stripe';
import { stripeProcessor } from '../payments/stripe.js';
import { ProcessorFault, WebhookSignatureError } from '../payments/processor.js';
import { startTestApp } from './support/app.js';
import { DEFAULTS } from '../kit/config-defaults.js';
import { PAYMENT_SETTINGS } from './support/payments.js';

// A local server answering Stripe's documented response bodies (https://docs.stripe.com/api/errors), one per token.
const ORDER = '11111111-2222-4333-8444-555555555555';
type Seen = { path: string; idempotencyKey?: string; body: string };
const seen: Seen[] = [];
const intent = (status: string, extra: object = {}) => ({
  id: 'pi_123',
  object: 'payment_intent',
  status,
  capture_method: 'manual',
  metadata: { order_id: ORDER },
  ...extra,
});
const ANSWERS: Record<string, [number, unknown] | 'hang' | 'garbage'> = {
  pm_approve: [200, intent('requires_capture')],
  pm_requires_pm: [200, intent('requires_payment_method', { last_payment_error: { code: 'card_declined' } })],
  pm_processing: [200, intent('processing')],
  pm_card_declined: [
    402,
    {
      error: {
        type: 'card_error',
        code: 'card_declined',
        decline_code: 'insufficient_funds',
        message: 'Your card has insufficient funds.',
      },
    },
  ],
  pm_expired: [402, { error: { type: 'card_error', code: 'expired_card', message: 'Your card has expired.' } }],
  pm_missing: [
    400,
    {
      error: {
        type: 'invalid_request_error',
        code: 'resource_missing',
        param: 'payment_method',
        message: "No such PaymentMethod: 'pm_missing'",
      },
    },
  ],
  pm_api_error: [500, { error: { type: 'api_error', message: 'An unknown error occurred' } }],
  pm_503: [503, { error: { type: 'api_error', message: 'Service unavailable' } }],
  pm_rate_limited: [
    429,
    { error: { type: 'invalid_request_error', code: 'rate_limit', message: 'Too many requests' } },
  ],
  pm_idempotency: [
    400,
    {
      error: {
        type: 'idempotency_error',
        message: 'Keys for idempotent requests can only be used with the same parameters they were first used with.',
      },
    },
  ],
  pm_auth: [401, { error: { type: 'invalid_request_error', message: 'Invalid API Key provided: sk_test_***' } }],
  pm_hang: 'hang',
  pm_garbage: 'garbage',
};
const server = http.createServer((req, res) => {
  let body = '';
  req.on('data', (d) => (body += d));
  req.on('end', () => {
    seen.push({ path: req.url ?? '', idempotencyKey: req.headers['idempotency-key'] as string | undefined, body });
    const pm = new URLSearchParams(body).get('payment_method') ?? '';
    const a = ANSWERS[pm] ?? [404, { error: { type: 'invalid_request_error', message: 'unrouted' } }];
    if (a === 'hang') return; // never answers: the client's timeout decides
    if (a === 'garbage') return res.writeHead(502, { 'content-type': 'text/html' }).end('<html>bad gateway</html>');
    res.writeHead(a[0], { 'content-type': 'application/json', 'request-id': 'req_test' }).end(JSON.stringify(a[1]));
  });
});
await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
afterAll(() => {
  server.closeAllConnections();
  server.close();
});
const WHSEC = 'whsec_test_stripe_secret';
const processor = stripeProcessor({
  secretKey: 'sk_test_local',
  webhookSecret: WHSEC,
  timeoutMs: 300,
  webhookToleranceSeconds: DEFAULTS.webhooks.toleranceSeconds,
  api: { host: '127.0.0.1', port: (server.address() as { port: number }).port, protocol: 'http' },
});
const authorize = (token: string) => processor.authorize({ orderId: ORDER, amount: 1999, currency: 'USD', token });

describe('the Stripe adapter', () => {
  it('creates a manual-capture PaymentIntent confirmed at once, with the order id as Idempotency-Key', async () => {
    seen.length = 0;
    expect(await authorize('pm_approve')).toEqual({ outcome: 'approved', providerRef: 'pi_123' });
    expect(seen).toHaveLength(1);
    expect(seen[0]!.path).toBe('/v1/payment_intents');
    expect(seen[0]!.idempotencyKey).toBe(ORDER);
    const form = new URLSearchParams(seen[0]!.body);
    expect(Object.fromEntries(form)).toMatchObject({
      amount: '1999',
      currency: 'usd',
      capture_method: 'manual',
      confirm: 'true',
      'metadata[order_id]': ORDER,
    });
  });

  it.each([
    ['pm_card_declined', 'declined', 'card_declined'],
    ['pm_expired', 'declined', 'expired_card'],
    ['pm_requires_pm', 'declined', 'card_declined'],
    ['pm_missing', 'declined', 'resource_missing'],
    ['pm_processing', 'unknown', 'processing'],
    ['pm_api_error', 'unknown', 'api_error'],
    ['pm_503', 'unknown', 'api_error'],
    ['pm_garbage', 'unknown', undefined],
    ['pm_rate_limited', 'unknown', undefined],
    ['pm_hang', 'unknown', undefined],
  ])('maps %s to %s', async (token, outcome, reason) => {
    const r = await authorize(token);
    expect(r.outcome).toBe(outcome);
    if (reason) expect(r.reason).toBe(reason);
  });

  it('maps a connection refused to unknown, never declined', async () => {
    const dead = stripeProcessor({
      secretKey: 'sk_test_local',
      webhookSecret: WHSEC,
      timeoutMs: 300,
      webhookToleranceSeconds: DEFAULTS.webhooks.toleranceSeconds,
      api: { host: '127.0.0.1', port: 1, protocol: 'http' },
    });
    expect((await dead.authorize({ orderId: ORDER, amount: 1, currency: 'USD', token: 'pm_approve' })).outcome).toBe(
      'unknown',
    );
  });

  it.each(['pm_idempotency', 'pm_auth'])('throws a fault for %s', async (token) => {
    await expect(authorize(token)).rejects.toBeInstanceOf(ProcessorFault);
  });
});

describe('Stripe webhooks', () => {
  const event = (type: string, id = 'evt_1') =>
    JSON.stringify({
      id,
      object: 'event',
      type,
      data: { object: { id: 'pi_123', object: 'payment_intent', metadata: { order_id: ORDER } } },
    });

  it('verifies a signature made by stripe.webhooks.generateTestHeaderString and maps the event', async () => {
    const payload = event('payment_intent.amount_capturable_updated');
    const header = Stripe.webhooks.generateTestHeaderString({ payload, secret: WHSEC });
    const e = await processor.verifyWebhook(payload, new Headers({ 'stripe-signature': header }));
    expect(e).toMatchObject({ id: 'evt_1', orderId: ORDER, outcome: 'approved', providerRef: 'pi_123' });
    const failed = event('payment_intent.payment_failed', 'evt_2');
    expect(
      (
        await processor.verifyWebhook(
          failed,
          new Headers({
            'stripe-signature': Stripe.webhooks.generateTestHeaderString({ payload: failed, secret: WHSEC }),
          }),
        )
      ).outcome,
    ).toBe('declined');
  });

  it.each([
    ['another secret', (p: string) => Stripe.webhooks.generateTestHeaderString({ payload: p, secret: 'whsec_other' })],
    [
      'a stale timestamp',
      (p: string) =>
        Stripe.webhooks.generateTestHeaderString({
          payload: p,
          secret: WHSEC,
          timestamp: Math.floor(Date.now() / 1000) - 3600,
        }),
    ],
    ['no header', () => ''],
  ])('refuses %s', async (_, header) => {
    const payload = event('payment_intent.succeeded');
    await expect(
      processor.verifyWebhook(payload, new Headers({ 'stripe-signature': header(payload) })),
    ).rejects.toBeInstanceOf(WebhookSignatureError);
  });

  it('answers 400 at POST /webhooks/payments/stripe for a bad signature and 200 for a good one', async () => {
    const t = await startTestApp(
      {},
      { processor, settings: { ...PAYMENT_SETTINGS, deadlineSeconds: 60, recoverySeconds: 10 } },
    );
    const payload = event('payment_intent.succeeded', 'evt_route');
    const post = (sig: string) =>
      t.app.request('/webhooks/payments/stripe', {
        method: 'POST',
        headers: { 'stripe-signature': sig },
        body: payload,
      });
    expect((await post('t=1,v1=00')).status).toBe(400);
    const ok = await post(Stripe.webhooks.generateTestHeaderString({ payload, secret: WHSEC }));
    expect(ok.status).toBe(200);
    expect(await ok.json()).toEqual({ received: true, result: 'noop' }); // no such order here: recorded, no effect
    expect((await t.app.request('/webhooks/payments/paypal', { method: 'POST', body: payload })).status).toBe(404);
  });
});
