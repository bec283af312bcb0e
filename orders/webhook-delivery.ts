// The webhook delivery worker (docs/events.md): sequences committed events, claims due deliveries (FOR UPDATE SKIP
// LOCKED, leased: db/functions/101_webhooks.sql), sends each OUTSIDE any transaction, signed to the Standard Webhooks
// specification with every live secret of its endpoint, and records the outcome. At least once: a worker killed
// mid-delivery leaves a lease that runs out, and the delivery is claimed and sent again (same webhook-id). Any number
// of workers (API processes, `npm run worker:webhooks`) share the work.
import { Webhook } from 'standardwebhooks';
import type { Db } from '../db/pool.js';
import { sequenceEvents } from '../db/events-store.js';
import { anyEnabledEndpoint, claimDeliveries, recordAttempt, type ClaimedDelivery } from '../db/webhooks-store.js';

export type WebhookPost = (a: {
  url: string;
  headers: Record<string, string>;
  body: string;
  timeoutMs: number;
  allowPrivate: boolean;
}) => Promise<{ status: number | null; error: string | null }>;

export type DeliverySettings = {
  retrySchedule: number[];
  timeoutMs: number;
  disableAfterHours: number;
  concurrencyPerEndpoint: number;
  allowPrivateUrls: boolean;
  pollMs: number;
};

/** A body larger than this is not sent (an order document is a few kB): the delivery fails, visibly. */
export const MAX_WEBHOOK_BODY_BYTES = 1_048_576;
/** Deliveries in flight in one worker, over every endpoint. */
const MAX_IN_FLIGHT = 64;
/** Events one sequencer step positions; a full step is followed by another at once, so a backlog drains. */
const SEQUENCE_STEP = 1000;

/** The JSON body of an event's webhook: `{id, type, timestamp, sequence, data}`. */
export const webhookBody = (
  d: Pick<ClaimedDelivery, 'eventId' | 'eventType' | 'eventCreatedAt' | 'sequence' | 'data'>,
) =>
  JSON.stringify({
    id: d.eventId,
    type: d.eventType,
    timestamp: d.eventCreatedAt.toISOString(),
    sequence: d.sequence,
    data: d.data,
  });

/**
 * The Standard Webhooks headers for `body`: webhook-id (the event id), webhook-timestamp (seconds), webhook-signature
 * (`v1,<base64 HMAC-SHA256 of id.timestamp.body>` per secret, space-separated: during a rotation both sign).
 */
export function signWebhook(eventId: string, body: string, secrets: readonly string[], at = new Date()) {
  return {
    'webhook-id': eventId,
    'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
    'webhook-signature': secrets.map((s) => new Webhook(s).sign(eventId, at, body)).join(' '),
  };
}

/** How long a claimed delivery is leased: twice the timeout and a second; a worker killed mid-delivery loses it then. */
export const leaseSecondsFor = (timeoutMs: number) => Math.ceil((2 * timeoutMs) / 1000) + 1;

/** The wait after failed attempt `attempt` (1-based), +-20% jitter; null: the schedule is spent. */
export function retryDelaySeconds(schedule: readonly number[], attempt: number, random = Math.random): number | null {
  const base = schedule[attempt - 1];
  return base === undefined ? null : base * (0.8 + 0.4 * random());
}

async function deliverOne(db: Db, post: WebhookPost, s: DeliverySettings, d: ClaimedDelivery): Promise<void> {
  const body = webhookBody(d);
  const started = performance.now();
  const r =
    Buffer.byteLength(body) > MAX_WEBHOOK_BODY_BYTES
      ? { status: null, error: `the body is larger than ${MAX_WEBHOOK_BODY_BYTES} bytes` }
      : await post({
          url: d.url,
          headers: { ...signWebhook(d.eventId, body, d.secrets), 'user-agent': 'lastunit-webhooks/1' },
          body,
          timeoutMs: s.timeoutMs,
          allowPrivate: s.allowPrivateUrls,
        }).catch((err: unknown) => ({ status: null, error: err instanceof Error ? err.message : String(err) }));
  const ok = r.status !== null && r.status >= 200 && r.status < 300;
  await recordAttempt(db, {
    deliveryId: d.deliveryId,
    attempt: d.attempt,
    ok,
    httpStatus: r.status,
    durationMs: Math.round(performance.now() - started),
    error: ok ? null : r.error,
    retrySeconds: ok ? null : retryDelaySeconds(s.retrySchedule, d.attempt),
    disableAfterHours: s.disableAfterHours,
  });
}

/**
 * Starts the delivery loop: a pass (sequence the committed events, then claim and send due deliveries) every `pollMs`,
 * whenever woken (`wake()`: a redelivery, a delivery that ended), at once again after a pass that found more work than
 * one step takes, and after a committed write (`afterCommit()`) while some endpoint is enabled. With none enabled,
 * nothing waits for a delivery, so a write's events are sequenced by the next poll (or by a feed read, which sequences
 * first: orders/events.ts) instead of by one more transaction per commit; whether one is enabled is asked again once
 * per `pollMs`. Returns wake, afterCommit and stop (stop waits for the deliveries in flight).
 * @example const worker = startWebhookDelivery({ db, post: postWebhook, settings, onError }); onCommit = () => worker.afterCommit()
 */
export function startWebhookDelivery(deps: {
  db: Db;
  post: WebhookPost;
  settings: DeliverySettings;
  onError: (err: unknown) => void;
}) {
  const { db, post, settings } = deps;
  const inFlight = new Set<Promise<void>>();
  let stopped = false;
  let running = false;
  let again = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  // whether a write's events may have a delivery waiting: true until asked, then asked at most once per pollMs
  let endpointsEnabled = true;
  let askedAt = Number.NEGATIVE_INFINITY;

  const pass = async () => {
    if (performance.now() - askedAt >= settings.pollMs) {
      endpointsEnabled = await anyEnabledEndpoint(db);
      askedAt = performance.now();
    }
    if ((await sequenceEvents(db, SEQUENCE_STEP)) === SEQUENCE_STEP) again = true;
    const free = MAX_IN_FLIGHT - inFlight.size;
    if (free <= 0) return;
    const claimed = await claimDeliveries(db, {
      limit: free,
      perEndpoint: settings.concurrencyPerEndpoint,
      leaseSeconds: leaseSecondsFor(settings.timeoutMs),
    });
    for (const d of claimed) {
      const p = deliverOne(db, post, settings, d)
        .catch(deps.onError)
        .finally(() => {
          inFlight.delete(p);
          wake(); // the order's next event may be due now
        });
      inFlight.add(p);
    }
    if (claimed.length === free) again = true;
  };
  const wake = () => {
    if (stopped) return;
    if (running) {
      again = true;
      return;
    }
    clearTimeout(timer);
    running = true;
    again = false;
    pass()
      .catch(deps.onError)
      .finally(() => {
        running = false;
        if (stopped) return;
        if (again) setImmediate(wake);
        else timer = setTimeout(wake, settings.pollMs);
      });
  };
  timer = setTimeout(wake, 0);
  return {
    wake,
    /** after a committed write: a pass now when an endpoint may be waiting for its events, else the next poll's */
    afterCommit() {
      if (endpointsEnabled) wake();
    },
    async stop() {
      stopped = true;
      clearTimeout(timer);
      while (running || inFlight.size > 0) await Promise.race([...inFlight, new Promise((r) => setTimeout(r, 10))]);
    },
  };
}
