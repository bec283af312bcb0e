/** What a processor answered to an authorization. `unknown` (timeout, network error, 5xx) is never a "no". */
export type AuthorizeOutcome = 'approved' | 'declined' | 'unknown' | 'action_required';
/** The processor needs the shopper (3-D Secure, a redirect) before it can decide. */
export type NextAction = { type: string; clientSecret: string | null; redirectUrl: string | null };
export type AuthorizeResult = {
  outcome: AuthorizeOutcome;
  providerRef?: string;
  reason?: string;
  nextAction?: NextAction;
};
/** What a cancel of a payment still undecided ended as: only `canceled` lets a hold go (a success that won the race confirms). */
export type CancelResult = 'canceled' | 'succeeded' | 'failed';
/** The inquiry answer used by the reconciler. */
export type LookupStatus = 'succeeded' | 'failed' | 'pending' | 'not_found';

/** A verified payment webhook, reduced to what the order domain needs. `outcome: null` = an event we do not act on. */
export type PaymentEvent = {
  id: string;
  type: string;
  orderId: string | null;
  outcome: 'approved' | 'declined' | 'action_required' | 'canceled' | 'refunded' | null;
  /** the attempt's processor key (absent: the order's latest attempt) */
  paymentKey?: string;
  providerRef?: string;
  reason?: string;
  nextAction?: NextAction;
};

/** `key`: the attempt's idempotency key at the processor (absent: the order id, attempt 1). */
export type AuthorizeRequest = { orderId: string; key?: string; amount: number; currency: string; token: string };

/**
 * A payment processor. The order id is the processor-side idempotency key: authorizing the same order twice
 * charges once. Only faults (misconfiguration, idempotency conflicts) throw; outcomes are values.
 */
export interface Processor {
  readonly name: string;
  authorize(req: AuthorizeRequest): Promise<AuthorizeResult>;
  /** The attempt with this key (the order id for attempt 1); `providerRef`: its payment id, when known (found by identity). */
  lookup(key: string, providerRef?: string | null): Promise<LookupStatus>;
  /** Gives the money of this attempt back (cancel an authorization, refund a capture). Idempotent at the processor. */
  void(key: string, providerRef?: string | null): Promise<void>;
  /** Cancels an attempt still undecided (pending, waiting for the shopper); answers what it ended as. Idempotent. */
  cancel(key: string, providerRef?: string | null): Promise<CancelResult>;
  /** Captures an approved authorization (collects the money). Idempotent: a second capture changes nothing. */
  capture(key: string, providerRef?: string | null): Promise<void>;
  /** Verifies signature and timestamp; throws WebhookSignatureError when the request is not authentic. */
  verifyWebhook(rawBody: string, headers: Headers): Promise<PaymentEvent>;
}

/** A webhook whose signature or timestamp does not check out: answered 400, no effect. */
export class WebhookSignatureError extends Error {
  override name = 'WebhookSignatureError';
}

/** A processor answer that is neither an outcome nor retryable (e.g. idempotency conflict): surfaces as a fault. */
export class ProcessorFault extends Error {
  override name = 'ProcessorFault';
}
