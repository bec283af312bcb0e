import type { Db } from '../db/pool.js';
import { applyPaymentEvent, orderIdByProviderRef } from '../db/payments-store.js';
import { WebhookSignatureError, type Processor } from '../payments/processor.js';
import type { Metrics } from '../common/metrics.js';
import { isUuid } from './rules.js';
import { invalidInputMessage } from '../common/invalid-input.js';

/** The payment results that moved an order (and wrote its outbox rows); the others changed nothing. */
export const isTransition = (kind: string) =>
  kind === 'confirmed' ||
  kind === 'rejected' ||
  kind === 'expired' ||
  kind === 'cancelled' ||
  kind === 'declined_held' ||
  kind === 'held';

/**
 * The SKUs whose availability a payment result changed: a decline, an expiry or a cancel puts the held units back; a
 * confirmation of an expired order re-claims them (`reclaimed`). Confirming a held or awaiting order moves no available
 * unit, so it names none, whichever of the client's answer and the processor's webhook records it first.
 */
export const unitsWentBack = (r: { kind: string; reclaimed?: boolean; order?: { lines: { sku: string }[] } | null }) =>
  r.kind === 'rejected' ||
  r.kind === 'expired' ||
  r.kind === 'cancelled' ||
  (r.kind === 'confirmed' && r.reclaimed === true)
    ? r.order?.lines.map((l) => l.sku)
    : undefined;

export type WebhookAnswer = {
  status: 200 | 400 | 404 | 422;
  body: { received: boolean; result?: string; error?: string };
};

/**
 * A payment webhook: verified first (signature + timestamp tolerance; a bad one is 400 with no effect), then the event id
 * and its guarded transition in ONE transaction (apply_payment_event): a repeated delivery finds its id and does nothing (I8);
 * a success meeting an order already released records one compensation.
 * @example const a = await handlePaymentWebhook(deps, 'sandbox', await c.req.text(), c.req.raw.headers)
 */
export async function handlePaymentWebhook(
  deps: {
    db: Db;
    metrics: Metrics;
    processors: Processor[];
    onOutboxWritten?: (skus?: string[]) => void | Promise<void>;
  },
  provider: string,
  rawBody: string,
  headers: Headers,
): Promise<WebhookAnswer> {
  const processor = deps.processors.find((p) => p.name === provider);
  if (!processor) return { status: 404, body: { received: false, error: `no payment provider "${provider}"` } };
  let event: Awaited<ReturnType<Processor['verifyWebhook']>>;
  try {
    event = await processor.verifyWebhook(rawBody, headers);
  } catch (err) {
    if (!(err instanceof WebhookSignatureError)) throw err;
    deps.metrics.paymentWebhooks.inc({ result: 'invalid' });
    return { status: 400, body: { received: false, error: err.message } };
  }
  let r: Awaited<ReturnType<typeof applyPaymentEvent>>;
  try {
    // an event that names only the payment (a charge's payment_intent) is matched by identity, never by search
    if (event.outcome && !event.orderId && event.providerRef)
      event.orderId = await orderIdByProviderRef(deps.db, event.providerRef);
    if (!event.outcome || !event.orderId || !isUuid(event.orderId)) {
      deps.metrics.paymentWebhooks.inc({ result: 'ignored' });
      return { status: 200, body: { received: true, result: 'ignored' } };
    }
    const outcome = event.outcome === 'canceled' ? 'cancelled' : event.outcome; // the processor confirms a cancel
    r = await applyPaymentEvent(
      deps.db,
      `payments:${provider}`,
      event.id,
      event.orderId,
      outcome,
      event.providerRef ?? null,
      event.reason ?? null,
      event.paymentKey ?? null,
      event.nextAction ?? null,
    );
  } catch (err) {
    // a signed event the database cannot store (a NUL character in its id...): 422, nothing recorded; a fault throws on
    const refusal = invalidInputMessage(err);
    if (refusal === null) throw err;
    deps.metrics.paymentWebhooks.inc({ result: 'unprocessable' });
    return { status: 422, body: { received: false, error: refusal } };
  }
  deps.metrics.paymentWebhooks.inc({ result: r.kind === 'duplicate' ? 'duplicate' : 'applied' });
  if (r.kind === 'compensate') deps.metrics.paymentCompensations.inc({ event: 'recorded' });
  if (isTransition(r.kind)) await deps.onOutboxWritten?.(unitsWentBack(r)); // the transition wrote outbox rows
  return { status: 200, body: { received: true, result: r.kind } };
}
