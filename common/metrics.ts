import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/** Every metric lastunit exports, on a registry of its own so several apps can live in one process (tests). */
export function createMetrics() {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  return {
    registry,
    placeOrderOutcomes: new Counter({
      name: 'lastunit_place_order_total',
      help: 'placeOrder answers by outcome (RESERVED, REPLAYED or the userErrors code)',
      labelNames: ['outcome'] as const,
      registers: [registry],
    }),
    claimSeconds: new Histogram({
      name: 'lastunit_claim_transaction_seconds',
      help: 'Time spent in the claiming transaction of placeOrder (one round trip), retries included',
      buckets: [0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
      registers: [registry],
    }),
    claimBatchSize: new Histogram({
      name: 'lastunit_claim_batch_size',
      help: 'Single-SKU orders placed together in one claiming transaction',
      buckets: [1, 2, 4, 8, 16, 32, 64],
      registers: [registry],
    }),
    txRetries: new Counter({
      name: 'lastunit_transaction_retries_total',
      help: 'Whole-transaction retries after a transient database failure, by SQLSTATE or connection code',
      labelNames: ['reason'] as const,
      registers: [registry],
    }),
    reservationsReleased: new Counter({
      name: 'lastunit_reservations_released_total',
      help: 'Orders whose holds were released by the customer (releaseReservation)',
      registers: [registry],
    }),
    reservationsExpired: new Counter({
      name: 'lastunit_reservations_expired_total',
      help: 'Orders whose holds were expired by the sweeper',
      registers: [registry],
    }),
    retentionDeleted: new Counter({
      name: 'lastunit_retention_deleted_total',
      help: 'Rows the retention jobs deleted (published outbox rows, old processed events), by table',
      labelNames: ['table'] as const,
      registers: [registry],
    }),
    idempotencyKeysDeleted: new Counter({
      name: 'lastunit_idempotency_keys_deleted_total',
      help: 'Idempotency key rows deleted after their retention',
      registers: [registry],
    }),
    paymentAuthorizations: new Counter({
      name: 'lastunit_payment_authorizations_total',
      help: 'Authorizations sent to the processor, by outcome (approved, declined, unknown, fault)',
      labelNames: ['outcome'] as const,
      registers: [registry],
    }),
    paymentUnknownOutcomes: new Counter({
      name: 'lastunit_payment_unknown_outcomes_total',
      help: 'Authorizations without an answer (timeout, network error, 5xx); the hold waits for a webhook or reconciliation',
      labelNames: ['reason'] as const,
      registers: [registry],
    }),
    paymentReconciliations: new Counter({
      name: 'lastunit_payment_reconciliations_total',
      help: 'Reconciler lookups of AWAITING_PAYMENT orders past their deadline, by result (confirmed, declined, expired, pending, lost, error)',
      labelNames: ['result'] as const,
      registers: [registry],
    }),
    paymentCompensations: new Counter({
      name: 'lastunit_payment_compensations_total',
      help: 'Compensations (voids of successes that met a released order): recorded, voided, failed',
      labelNames: ['event'] as const,
      registers: [registry],
    }),
    paymentCaptures: new Counter({
      name: 'lastunit_payment_captures_total',
      help: 'Capture attempts of confirmed payments, by outcome (captured; retry: failed, tried again later; failed: gave up after its last attempt)',
      labelNames: ['outcome'] as const,
      registers: [registry],
    }),
    paymentWebhooks: new Counter({
      name: 'lastunit_payment_webhooks_total',
      help: 'Payment webhooks received, by result (applied, duplicate, ignored, invalid, unprocessable)',
      labelNames: ['result'] as const,
      registers: [registry],
    }),
    redisUp: new Gauge({
      name: 'lastunit_redis_up',
      help: '1 while the Redis connection is ready, 0 while it is down (reads fall back to PostgreSQL)',
      registers: [registry],
    }),
    cacheReads: new Counter({
      name: 'lastunit_availability_cache_reads_total',
      help: 'Availability reads by source: hit (Redis), miss (PostgreSQL, then cached) or fallback (Redis unavailable, PostgreSQL)',
      labelNames: ['result'] as const,
      registers: [registry],
    }),
    outboxPublished: new Counter({
      name: 'lastunit_outbox_published_total',
      help: 'Outbox rows published by this process relay, by topic',
      labelNames: ['topic'] as const,
      registers: [registry],
    }),
    outboxDeliveryLag: new Histogram({
      name: 'lastunit_outbox_delivery_lag_seconds',
      help: 'From the transaction that wrote an outbox row to this relay publishing it to live subscribers (commit-to-delivery lag)',
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers: [registry],
    }),
    reconcilerLastRun: new Gauge({
      name: 'lastunit_reconciler_last_run_timestamp_seconds',
      help: "When this process's reconciler last finished a pass (Unix seconds); 0 before its first",
      registers: [registry],
    }),
    relayFailures: new Counter({
      name: 'lastunit_relay_failures_total',
      help: 'Relay batches that failed (rows stay unpublished and are retried)',
      registers: [registry],
    }),
    channelWebhooks: new Counter({
      name: 'lastunit_channel_webhooks_total',
      help: 'Marketplace order webhooks by channel and result (confirmed, oversold, cancelled, duplicate, duplicate_order, invalid, ...)',
      labelNames: ['channel', 'result'] as const,
      registers: [registry],
    }),
    channelOversells: new Counter({
      name: 'lastunit_channel_oversells_total',
      help: 'Marketplace orders the stock could not cover (CHANNEL_OVERSOLD incidents), by channel',
      labelNames: ['channel'] as const,
      registers: [registry],
    }),
    channelPushes: new Counter({
      name: 'lastunit_channel_pushes_total',
      help: 'Listed-quantity pushes to marketplaces by channel and result (ok, stale, rate_limited, failed)',
      labelNames: ['channel', 'result'] as const,
      registers: [registry],
    }),
    channelRateLimited: new Counter({
      name: 'lastunit_channel_429_total',
      help: 'Marketplace 429 answers by channel (that channel waits Retry-After; others go on)',
      labelNames: ['channel'] as const,
      registers: [registry],
    }),
    channelPushLag: new Histogram({
      name: 'lastunit_channel_push_lag_seconds',
      help: 'From the committed stock change to the marketplace acknowledging its listed quantity, by channel (p50/p99 via histogram_quantile)',
      labelNames: ['channel'] as const,
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900],
      registers: [registry],
    }),
    channelCancellations: new Counter({
      name: 'lastunit_channel_cancellations_total',
      help: 'Cancellations of oversold orders asked of marketplaces, by channel and result (ok, failed)',
      labelNames: ['channel', 'result'] as const,
      registers: [registry],
    }),
  };
}
export type Metrics = ReturnType<typeof createMetrics>;
