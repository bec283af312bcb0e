import { Hono } from 'hono';
import type { Db } from '../db/pool.js';
import type { Metrics } from '../common/metrics.js';
import { handlePaymentWebhook } from '../orders/payment-events.js';
import type { Processor } from '../payments/processor.js';

/**
 * `POST /:provider` for payment processors. No API key: the signature is the authentication (verified on the raw body,
 * so the body is read as text, never re-serialized). Thin: the logic is in orders/payment-events.ts.
 * @example app.route('/webhooks/payments', paymentWebhooks({ db, metrics, processors: [processor] }))
 */
export function paymentWebhooks(deps: { db: Db; metrics: Metrics; processors: Processor[]; onOutboxWritten?: (skus?: string[]) => void | Promise<void> }) {
  const app = new Hono();
  app.post('/:provider', async (c) => {
    const answer = await handlePaymentWebhook(deps, c.req.param('provider'), await c.req.text(), c.req.raw.headers);
    return c.json(answer.body, answer.status);
  });
  return app;
}
