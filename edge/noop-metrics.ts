import type { Metrics } from '../orders/metrics.js';

const counter = { inc: () => {} };
const histogram = { startTimer: () => () => 0, observe: () => {} };

/**
 * Metrics that record nothing, for hosts without prom-client (Workers: use Workers Analytics instead).
 * Only the calls the domain makes exist (inc, startTimer); /metrics answers an empty exposition.
 * @example createApp({ metrics: noopMetrics(), ... })
 */
export function noopMetrics(): Metrics {
  const m = {
    registry: { contentType: 'text/plain; version=0.0.4; charset=utf-8', metrics: async () => '' },
    placeOrderOutcomes: counter,
    claimSeconds: histogram,
    txRetries: counter,
    reservationsReleased: counter,
    reservationsExpired: counter,
    idempotencyKeysDeleted: counter,
  };
  return m as unknown as Metrics;
}
