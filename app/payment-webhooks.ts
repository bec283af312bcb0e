// The payment processors' webhook route: bounded before it reads, authenticated by the signature, thin over
// orders/payment-events.ts.
import { Hono } from 'hono';
import type { Db } from '../db/pool.js';
import type { Metrics } from '../common/metrics.js';
import { handlePaymentWebhook } from '../orders/payment-events.js';
import type { Processor } from '../payments/processor.js';
import { requestBodyLimit } from './request-guards.js';

/**
 * `POST /:provider` for payment processors. No API key: the signature is the authentication (verified on the raw body,
 * so the body is read as text, never re-serialized). Bounded before it reads: an unknown provider is answered 404
 * without reading the body, and a body over `maxBodyBytes` is refused with 413 while it streams (a declared
 * Content-Length over it is refused at once). Thin: the logic is in orders/payment-events.ts.
 * @example app.route('/webhooks/payments', paymentWebhooks({ db, metrics, processors: [processor], maxBodyBytes: 262_144 }))
 */
export function paymentWebhooks(deps: {
  db: Db;
  metrics: Metrics;
  processors: Processor[];
  onOutboxWritten?: (skus?: string[]) => void | Promise<void>;
  /** webhook bodies are events, a few KiB: this bounds what one delivery may make the server read */
  maxBodyBytes: number;
}) {
  const app = new Hono();
  const known = new Set(deps.processors.map((p) => p.name));
  app.post(
    '/:provider',
    async (c, next) => {
      const provider = c.req.param('provider');
      if (!known.has(provider)) return c.json({ received: false, error: `no payment provider "${provider}"` }, 404);
      return next();
    },
    requestBodyLimit(deps.maxBodyBytes),
    async (c) => {
      const answer = await handlePaymentWebhook(deps, c.req.param('provider'), await c.req.text(), c.req.raw.headers);
      return c.json(answer.body, answer.status);
    },
  );
  return app;
}
