// The Processor for Stripe: PaymentIntents with the attempt's idempotency key, and Stripe's signed webhooks.
import Stripe from 'stripe';
import type {
  AuthorizeRequest,
  AuthorizeResult,
  CancelResult,
  LookupStatus,
  NextAction,
  PaymentEvent,
  Processor,
} from './processor.js';
import { ProcessorFault, WebhookSignatureError } from './processor.js';

export type StripeProcessorOptions = {
  secretKey: string;
  webhookSecret: string;
  timeoutMs: number;
  /** WEBHOOK_TOLERANCE_SECONDS: signed timestamps further from now are refused */
  webhookToleranceSeconds: number;
  /** another API endpoint (tests point it at a local server answering Stripe's documented bodies) */
  api?: { host: string; port: number; protocol: 'http' | 'https' };
};

/**
 * Stripe as the processor: a PaymentIntent confirmed at once with manual capture (the authorization holds the money;
 * `capture` collects it), the attempt's key (the order id for attempt 1) as Stripe's Idempotency-Key, and Stripe's own
 * webhook signature scheme. The PaymentIntent id is kept by the caller as soon as it is known and every later call
 * names it (by identity); the Search API (eventually consistent) is only the last resort for an attempt whose
 * authorization never answered, and then only after the caller repeated the authorization with the same key.
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

  const findIntent = async (key: string, providerRef?: string | null) => {
    if (providerRef) return stripe.paymentIntents.retrieve(providerRef); // by identity: strongly consistent
    // Last resort (eventually consistent, about a minute): an attempt whose id we never learned.
    const field = key.includes(':') ? 'payment_key' : 'order_id';
    const found = await stripe.paymentIntents.search({
      query: `metadata['${field}']:'${key.replace(/[^0-9a-f:-]/gi, '')}'`,
      limit: 1,
    });
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
            metadata: { order_id: req.orderId, payment_key: req.key ?? req.orderId },
          },
          { idempotencyKey: req.key ?? req.orderId },
        );
        if (pi.status === 'requires_capture' || pi.status === 'succeeded')
          return { outcome: 'approved', providerRef: pi.id };
        if (pi.status === 'requires_payment_method' || pi.status === 'canceled')
          return { outcome: 'declined', providerRef: pi.id, reason: pi.last_payment_error?.code ?? pi.status };
        if (pi.status === 'requires_action')
          return { outcome: 'action_required', providerRef: pi.id, nextAction: nextActionOf(pi) };
        return { outcome: 'unknown', providerRef: pi.id, reason: pi.status }; // processing: wait for the webhook
      } catch (err) {
        return mapStripeError(err);
      }
    },

    async lookup(key: string, providerRef?: string | null): Promise<LookupStatus> {
      const pi = await findIntent(key, providerRef);
      if (!pi) return 'not_found';
      if (pi.status === 'requires_capture' || pi.status === 'succeeded') return 'succeeded';
      if (pi.status === 'requires_payment_method' || pi.status === 'canceled') return 'failed';
      return 'pending';
    },

    async void(key: string, providerRef?: string | null): Promise<void> {
      const pi = await findIntent(key, providerRef);
      if (!pi) throw new Error(`no PaymentIntent found for ${key} yet`); // never "done" on not-found: retried later
      if (pi.status === 'canceled') return;
      // after capture the money goes back as a refund, before it as a cancel of the authorization
      if (pi.status === 'succeeded')
        await stripe.refunds.create({ payment_intent: pi.id }, { idempotencyKey: `refund-${key}` });
      else await stripe.paymentIntents.cancel(pi.id, {}, { idempotencyKey: `cancel-${key}` });
    },

    async cancel(key: string, providerRef?: string | null): Promise<CancelResult> {
      const pi = await findIntent(key, providerRef);
      if (!pi) throw new Error(`no PaymentIntent found for ${key} yet`); // not confirmed: the hold stays
      if (pi.status === 'requires_capture' || pi.status === 'succeeded') return 'succeeded'; // the success won the race
      if (pi.status === 'canceled') return 'canceled';
      try {
        const c = await stripe.paymentIntents.cancel(pi.id, {}, { idempotencyKey: `cancel-${key}` });
        return c.status === 'canceled'
          ? 'canceled'
          : c.status === 'requires_capture' || c.status === 'succeeded'
            ? 'succeeded'
            : 'failed';
      } catch (err) {
        // Stripe refuses to cancel an intent that succeeded meanwhile: ask again what it is
        const now = await stripe.paymentIntents.retrieve(pi.id);
        if (now.status === 'requires_capture' || now.status === 'succeeded') return 'succeeded';
        if (now.status === 'canceled') return 'canceled';
        throw err;
      }
    },

    async capture(key: string, providerRef?: string | null): Promise<void> {
      const pi = await findIntent(key, providerRef);
      if (!pi) throw new Error(`no PaymentIntent found for ${key} yet`);
      if (pi.status === 'succeeded') return; // already captured
      await stripe.paymentIntents.capture(pi.id, {}, { idempotencyKey: `capture-${key}` });
    },

    async verifyWebhook(rawBody: string, headers: Headers): Promise<PaymentEvent> {
      let event: Stripe.Event;
      try {
        event = stripe.webhooks.constructEvent(
          rawBody,
          headers.get('stripe-signature') ?? '',
          opts.webhookSecret,
          opts.webhookToleranceSeconds,
        );
      } catch (err) {
        throw new WebhookSignatureError((err as Error).message);
      }
      const obj = event.data.object as {
        id?: string;
        object?: string;
        payment_intent?: string;
        metadata?: Record<string, string>;
        last_payment_error?: { code?: string };
      };
      const outcome =
        event.type === 'payment_intent.amount_capturable_updated' || event.type === 'payment_intent.succeeded'
          ? 'approved'
          : event.type === 'payment_intent.payment_failed'
            ? 'declined'
            : event.type === 'payment_intent.requires_action'
              ? 'action_required'
              : event.type === 'payment_intent.canceled'
                ? 'canceled'
                : event.type === 'charge.refunded'
                  ? 'refunded'
                  : null;
      const isIntent = obj.object === undefined || obj.object === 'payment_intent';
      return {
        id: event.id,
        type: event.type,
        orderId: obj.metadata?.order_id ?? null,
        outcome,
        paymentKey: obj.metadata?.payment_key,
        // charge.refunded carries the charge; its payment_intent is the payment's identity
        providerRef: isIntent ? obj.id : obj.payment_intent,
        reason: obj.last_payment_error?.code,
        ...(outcome === 'action_required'
          ? { nextAction: nextActionOf(event.data.object as Stripe.PaymentIntent) }
          : {}),
      };
    },
  };
}

/** A PaymentIntent's next_action as ours: the client secret lets Stripe.js run 3-D Secure; a redirect gives its URL. */
function nextActionOf(pi: Pick<Stripe.PaymentIntent, 'client_secret' | 'next_action'>): NextAction {
  return {
    type: pi.next_action?.type ?? 'use_stripe_sdk',
    clientSecret: pi.client_secret ?? null,
    redirectUrl: pi.next_action?.redirect_to_url?.url ?? null,
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
