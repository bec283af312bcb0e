/** What a processor answered to an authorization. `unknown` (timeout, network error, 5xx) is never a "no". */
export type AuthorizeOutcome = 'approved' | 'declined' | 'unknown';
export type AuthorizeResult = { outcome: AuthorizeOutcome; providerRef?: string; reason?: string };
/** The inquiry answer used by the reconciler. */
export type LookupStatus = 'succeeded' | 'failed' | 'pending' | 'not_found';

/** A verified payment webhook, reduced to what the order domain needs. `outcome: null` = an event we do not act on. */
export type PaymentEvent = {
  id: string;
  type: string;
  orderId: string | null;
  outcome: 'approved' | 'declined' | null;
  providerRef?: string;
  reason?: string;
};

export type AuthorizeRequest = { orderId: string; amount: number; currency: string; token: string };

/**
 * A payment processor. The order id is the processor-side idempotency key: authorizing the same order twice
 * charges once. Only faults (misconfiguration, idempotency conflicts) throw; outcomes are values.
 */
export interface Processor {
  readonly name: string;
  authorize(req: AuthorizeRequest): Promise<AuthorizeResult>;
  lookup(orderId: string): Promise<LookupStatus>;
  /** Gives the money of this order back (cancel an authorization / refund). Idempotent at the processor. */
  void(orderId: string): Promise<void>;
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
