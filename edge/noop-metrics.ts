import type { Metrics } from '../common/metrics.js';

/** Any prom-client call the code makes (inc, set, observe, startTimer, labels): accepted and dropped. */
const noop: any = new Proxy(() => noop, {
  get: (_t, prop) => (prop === 'startTimer' ? () => () => 0 : noop),
  apply: () => noop,
});

/**
 * Metrics that record nothing, for hosts without prom-client (Workers: use Workers Analytics instead). Every metric
 * name resolves to a do-nothing metric, so a metric added for the Node host can never break this host.
 * /metrics answers an empty exposition.
 * @example createApp({ metrics: noopMetrics(), ... })
 */
export function noopMetrics(): Metrics {
  const registry = { contentType: 'text/plain; version=0.0.4; charset=utf-8', metrics: async () => '' };
  return new Proxy({ registry } as Record<string | symbol, unknown>, {
    get: (target, prop) => (prop in target ? target[prop] : noop),
  }) as unknown as Metrics;
}
