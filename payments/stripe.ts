import Stripe from 'stripe';
import type { AuthorizeRequest, AuthorizeResult, LookupStatus, PaymentEvent, Processor } from './processor.js';
import { ProcessorFault, WebhookSignatureError } from './processor.js';

export type StripeProcessorOptions = {
  secretKey: string;
  webhookSecret: string;
  timeoutMs: number;
  webhookToleranceSeconds?: number;
  /** another API endpoint (tests point it at a local server answering Stripe's documented bodies) */
  api?: { host: string; port: number; protocol: 'http' | 'https' };
};

/**
 * Stripe as the processor: a PaymentIntent confirmed at once with manual capture (the authorization holds the money,
 * nothing is captured here), the order id as Stripe's Idempotency-Key, and Stripe's own webhook signature scheme.
 * Outcome mapping (https://docs.stripe.com/error-handling):
 *   card errors (402, e.g. card_declined) and refused requests (400/404)      -> declined: nothing was charged
 *   timeouts, connection errors, rate limits, api_error, any 5xx             -> unknown: it may have gone through
 *   idempotency_error, authentication and permission errors                  -> fault (thrown): an operator must look
 * @example const processor = stripeProcessor({ secretKey, webhookSecret, timeoutMs: 5000 })
 */
export function stripeProcessor(opts: StripeProcessorOptions): Processor {
  const stripe = new Stripe(opts.secretKey, {
    timeout: opts.timeoutMs,
    maxNetworkRetries: 0, // an unanswered call is "unknown" and reconciled; we never race our own retry
    telemetry: false,
    ...(opts.api ?? {}),
  });

  const findIntent = async (orderId: string) => {
    // Search is eventually consistent (about a minute): PAYMENT_DEADLINE_SECONDS should stay at 60 or more with Stripe.
    const found = await stripe.paymentIntents.search({ query: `metadata['order_id']:'${orderId.replace(/[^0-9a-f-]/gi, '')}'`, limit: 1 });
    return found.data[0] ?? null;
  };

  return {
    name: 'stripe',
    async authorize(req: AuthorizeRequest): Promise<AuthorizeResult> {
      try {
        const pi = await stripe.paymentIntents.create(
          {
            amount: req.amount,
            currency: req.currency.toLowerCase(),
            payment_method: req.token,
            automatic_payment_methods: { enabled: true, allow_redirects: 'never' }, // no redirect: the outcome is known at once
            confirm: true,
            capture_method: 'manual',
            metadata: { order_id: req.orderId },
          },
          { idempotencyKey: req.orderId },
        );
        if (pi.status === 'requires_capture' || pi.status === 'succeeded') return { outcome: 'approved', providerRef: pi.id };
        if (pi.status === 'requires_payment_method' || pi.status === 'canceled')
          return { outcome: 'declined', providerRef: pi.id, reason: pi.last_payment_error?.code ?? pi.status };
        return { outcome: 'unknown', providerRef: pi.id, reason: pi.status }; // processing, requires_action: wait for the webhook
      } catch (err) {
        return mapStripeError(err);
      }
    },

    async lookup(orderId: string): Promise<LookupStatus> {
      const pi = await findIntent(orderId);
      if (!pi) return 'not_found';
      if (pi.status === 'requires_capture' || pi.status === 'succeeded') return 'succeeded';
      if (pi.status === 'requires_payment_method' || pi.status === 'canceled') return 'failed';
      return 'pending';
    },

    async void(orderId: string): Promise<void> {
      const pi = await findIntent(orderId);
      if (!pi || pi.status === 'canceled') return;
      if (pi.status === 'succeeded') await stripe.refunds.create({ payment_intent: pi.id }, { idempotencyKey: `refund-${orderId}` });
      else await stripe.paymentIntents.cancel(pi.id, {}, { idempotencyKey: `cancel-${orderId}` });
    },

    async verifyWebhook(rawBody: string, headers: Headers): Promise<PaymentEvent> {
      let event: Stripe.Event;
      try {
        event = stripe.webhooks.constructEvent(rawBody, headers.get('stripe-signature') ?? '', opts.webhookSecret, opts.webhookToleranceSeconds ?? 300);
      } catch (err) {
        throw new WebhookSignatureError((err as Error).message);
      }
      const obj = event.data.object as { id?: string; metadata?: Record<string, string>; last_payment_error?: { code?: string } };
      const outcome =
        event.type === 'payment_intent.amount_capturable_updated' || event.type === 'payment_intent.succeeded'
          ? 'approved'
          : event.type === 'payment_intent.payment_failed'
            ? 'declined'
            : null;
      return { id: event.id, type: event.type, orderId: obj.metadata?.order_id ?? null, outcome, providerRef: obj.id, reason: obj.last_payment_error?.code };
    },
  };
}

/** Stripe's documented error classes as outcomes; see stripeProcessor. Exported for the mapping tests. */
export function mapStripeError(err: unknown): AuthorizeResult {
  const e = err as { type?: string; code?: string; statusCode?: number; rawType?: string; message?: string };
  switch (e?.type) {
    case 'StripeCardError':
      return { outcome: 'declined', reason: e.code ?? 'card_error' };
    case 'StripeIdempotencyError':
    case 'StripeAuthenticationError':
    case 'StripePermissionError':
      throw new ProcessorFault(`stripe ${e.type}: ${e.message}`);
    case 'StripeConnectionError':
    case 'StripeRateLimitError':
    case 'StripeAPIError':
      return { outcome: 'unknown', reason: e.rawType ?? e.type };
    case 'StripeInvalidRequestError':
      if ((e.statusCode ?? 0) >= 500) return { outcome: 'unknown', reason: 'api_error' };
      return { outcome: 'declined', reason: e.code ?? 'invalid_request' };
  }
  if ((e?.statusCode ?? 0) >= 500 || e?.rawType === 'api_error') return { outcome: 'unknown', reason: 'api_error' };
  throw err; // not a Stripe answer at all: a bug, surface it
}
