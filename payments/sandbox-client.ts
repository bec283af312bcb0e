import type { AuthorizeRequest, AuthorizeResult, LookupStatus, PaymentEvent, Processor } from './processor.js';
import { ProcessorFault, WebhookSignatureError } from './processor.js';
import { SIGNATURE_HEADER, verifySignature } from './webhook-signature.js';

export type SandboxClientOptions = {
  /** where the sandbox listens, e.g. http://127.0.0.1:4100 */
  url: string;
  timeoutMs: number;
  webhookSecret: string;
  webhookToleranceSeconds?: number;
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
      const res = await fetch(new URL(path, opts.url), { ...init, signal: ac.signal, headers: { 'content-type': 'application/json' } });
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
      const body = (await res.json()) as { outcome: string; providerRef?: string; reason?: string };
      if (body.outcome === 'approved') return { outcome: 'approved', providerRef: body.providerRef };
      if (body.outcome === 'declined') return { outcome: 'declined', providerRef: body.providerRef, reason: body.reason };
      return { outcome: 'unknown', reason: 'unexpected_answer' };
    },

    async lookup(orderId: string): Promise<LookupStatus> {
      const res = await call(`/v1/payments/${encodeURIComponent(orderId)}`);
      if (res.status !== 200) throw new Error(`sandbox lookup failed: HTTP ${res.status}`); // the reconciler retries later
      const { status } = (await res.json()) as { status: LookupStatus };
      return status;
    },

    async void(orderId: string): Promise<void> {
      const res = await call(`/v1/payments/${encodeURIComponent(orderId)}/void`, { method: 'POST', body: '{}' });
      if (res.status !== 200) throw new Error(`sandbox void failed: HTTP ${res.status}`);
    },

    async verifyWebhook(rawBody: string, headers: Headers): Promise<PaymentEvent> {
      verifySignature(rawBody, headers.get(SIGNATURE_HEADER), opts.webhookSecret, opts.webhookToleranceSeconds ?? 300);
      let e: { id?: unknown; type?: unknown; orderId?: unknown; providerRef?: unknown; reason?: unknown };
      try {
        e = JSON.parse(rawBody);
      } catch {
        throw new WebhookSignatureError('signed body is not JSON');
      }
      if (typeof e.id !== 'string' || typeof e.type !== 'string') throw new WebhookSignatureError('signed body is not an event');
      const outcome = e.type === 'payment.succeeded' ? 'approved' : e.type === 'payment.failed' ? 'declined' : null;
      return {
        id: e.id,
        type: e.type,
        orderId: typeof e.orderId === 'string' ? e.orderId : null,
        outcome,
        providerRef: typeof e.providerRef === 'string' ? e.providerRef : undefined,
        reason: typeof e.reason === 'string' ? e.reason : undefined,
      };
    },
  };
}
