// The Processor for the sandbox processor (payments/sandbox-server.ts) over HTTP, and the check of its signed webhooks.
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
import { SIGNATURE_HEADER, verifySignature } from './webhook-signature.js';

export type SandboxClientOptions = {
  /** where the sandbox listens, e.g. http://127.0.0.1:4100 */
  url: string;
  timeoutMs: number;
  webhookSecret: string;
  /** WEBHOOK_TOLERANCE_SECONDS: signed timestamps further from now are refused */
  webhookToleranceSeconds: number;
};

/**
 * The processor implementation that talks HTTP to the sandbox. Every call is bounded by `timeoutMs` (AbortController);
 * a timeout, a network error or a 5xx is `unknown`, never `declined`.
 * @example const processor = sandboxProcessor({ url: sandbox.url, timeoutMs: 5000, webhookSecret })
 */
export function sandboxProcessor(opts: SandboxClientOptions): Processor {
  const call = async (path: string, init: RequestInit = {}): Promise<Response> => {
    const ac = new AbortController();
    const timer = setTimeout(() => ac.abort(), opts.timeoutMs);
    try {
      const res = await fetch(new URL(path, opts.url), {
        ...init,
        signal: ac.signal,
        headers: { 'content-type': 'application/json' },
      });
      await res.clone().text(); // the body arrives within the same deadline
      return res;
    } finally {
      clearTimeout(timer);
    }
  };

  return {
    name: 'sandbox',
    async authorize(req: AuthorizeRequest): Promise<AuthorizeResult> {
      let res: Response;
      try {
        res = await call('/v1/authorize', { method: 'POST', body: JSON.stringify(req) });
      } catch (err) {
        return { outcome: 'unknown', reason: (err as Error).name === 'AbortError' ? 'timeout' : 'network_error' };
      }
      if (res.status >= 500) return { outcome: 'unknown', reason: `http_${res.status}` };
      if (res.status !== 200) throw new ProcessorFault(`sandbox refused the authorization request: HTTP ${res.status}`);
      const body = (await res.json()) as {
        outcome: string;
        providerRef?: string;
        reason?: string;
        nextAction?: NextAction;
      };
      if (body.outcome === 'approved') return { outcome: 'approved', providerRef: body.providerRef };
      if (body.outcome === 'action_required' && body.nextAction)
        return { outcome: 'action_required', providerRef: body.providerRef, nextAction: toNextAction(body.nextAction) };
      if (body.outcome === 'declined')
        return { outcome: 'declined', providerRef: body.providerRef, reason: body.reason };
      return { outcome: 'unknown', reason: 'unexpected_answer' };
    },

    async lookup(key: string): Promise<LookupStatus> {
      const res = await call(`/v1/payments/${encodeURIComponent(key)}`);
      if (res.status !== 200) throw new Error(`sandbox lookup failed: HTTP ${res.status}`); // the reconciler retries later
      const { status } = (await res.json()) as { status: LookupStatus };
      return status;
    },

    async void(key: string): Promise<void> {
      const res = await call(`/v1/payments/${encodeURIComponent(key)}/void`, { method: 'POST', body: '{}' });
      if (res.status !== 200) throw new Error(`sandbox void failed: HTTP ${res.status}`);
    },

    async cancel(key: string): Promise<CancelResult> {
      const res = await call(`/v1/payments/${encodeURIComponent(key)}/cancel`, { method: 'POST', body: '{}' });
      if (res.status !== 200) throw new Error(`sandbox cancel failed: HTTP ${res.status}`); // not confirmed: the hold stays
      const { status } = (await res.json()) as { status: string };
      if (status === 'canceled' || status === 'succeeded' || status === 'failed') return status;
      throw new Error(`sandbox cancel answered ${status}`);
    },

    async capture(key: string): Promise<void> {
      const res = await call(`/v1/payments/${encodeURIComponent(key)}/capture`, { method: 'POST', body: '{}' });
      if (res.status !== 200) throw new Error(`sandbox capture failed: HTTP ${res.status}`); // retried by the capture step
    },

    async verifyWebhook(rawBody: string, headers: Headers): Promise<PaymentEvent> {
      verifySignature(rawBody, headers.get(SIGNATURE_HEADER), opts.webhookSecret, opts.webhookToleranceSeconds);
      let e: {
        id?: unknown;
        type?: unknown;
        orderId?: unknown;
        paymentKey?: unknown;
        providerRef?: unknown;
        reason?: unknown;
        nextAction?: unknown;
      };
      try {
        e = JSON.parse(rawBody);
      } catch {
        throw new WebhookSignatureError('signed body is not JSON');
      }
      if (typeof e.id !== 'string' || typeof e.type !== 'string')
        throw new WebhookSignatureError('signed body is not an event');
      const outcome =
        e.type === 'payment.succeeded'
          ? 'approved'
          : e.type === 'payment.failed'
            ? 'declined'
            : e.type === 'payment.requires_action'
              ? 'action_required'
              : e.type === 'payment.canceled'
                ? 'canceled'
                : null;
      return {
        id: e.id,
        type: e.type,
        orderId: typeof e.orderId === 'string' ? e.orderId : null,
        outcome,
        paymentKey: typeof e.paymentKey === 'string' ? e.paymentKey : undefined,
        nextAction:
          e.nextAction && typeof e.nextAction === 'object' ? toNextAction(e.nextAction as NextAction) : undefined,
        providerRef: typeof e.providerRef === 'string' ? e.providerRef : undefined,
        reason: typeof e.reason === 'string' ? e.reason : undefined,
      };
    },
  };
}

const toNextAction = (n: Partial<NextAction>): NextAction => ({
  type: String(n.type ?? 'three_d_secure'),
  clientSecret: typeof n.clientSecret === 'string' ? n.clientSecret : null,
  redirectUrl: typeof n.redirectUrl === 'string' ? n.redirectUrl : null,
});
