// A sale at a glance (docs/console.md): a rolling per-second series, kept in memory, of what this process's own
// Prometheus counters moved by: placeOrder claims, refusals and holds, and the outbox's commit-to-delivery lag. One
// sample a second (reading prom-client's values, no request path touched); the newest 15 minutes are kept.
import type { Metrics } from './metrics.js';

/** One second: placeOrder answers (claims = holds + refusals; replays are not counted) and the mean delivery lag. */
export type SaleSecond = {
  at: Date;
  claims: number;
  refusals: number;
  holds: number;
  /** mean commit-to-delivery lag of the outbox rows this relay published in that second; null: none published */
  deliveryLagMs: number | null;
};

export type SaleActivity = {
  /** the newest `seconds` samples, oldest first (at most the 900 kept) */
  last(seconds: number): SaleSecond[];
  /** when this process's reconciler last finished a pass; null before its first (or when it runs elsewhere) */
  reconcilerLastRunAt(): Promise<Date | null>;
  /** takes one sample now (the timer does it every second; tests may call it) */
  sample(): Promise<void>;
  stop(): void;
};

export const KEPT_SECONDS = 900;
// placeOrder outcomes that claimed units (the order's status after the claim); every other outcome but REPLAYED refused
const HOLD_OUTCOMES = new Set(['RESERVED', 'AWAITING_PAYMENT', 'CONFIRMED']);

type Totals = { claims: number; holds: number; lagSum: number; lagCount: number };

async function totals(metrics: Metrics): Promise<Totals> {
  const out: Totals = { claims: 0, holds: 0, lagSum: 0, lagCount: 0 };
  for (const v of (await metrics.placeOrderOutcomes.get()).values) {
    const outcome = String(v.labels.outcome ?? '');
    if (outcome === 'REPLAYED') continue;
    out.claims += v.value;
    if (HOLD_OUTCOMES.has(outcome)) out.holds += v.value;
  }
  for (const v of (await metrics.outboxDeliveryLag.get()).values) {
    const name = (v as { metricName?: string }).metricName;
    if (name?.endsWith('_sum')) out.lagSum += v.value;
    else if (name?.endsWith('_count')) out.lagCount += v.value;
  }
  return out;
}

/**
 * Starts sampling `metrics` every second (the timer is unref'd: it never keeps a process alive).
 * @example const activity = startSaleActivity(metrics); activity.last(900)
 */
export function startSaleActivity(metrics: Metrics, opts: { intervalMs?: number } = {}): SaleActivity {
  const samples: SaleSecond[] = [];
  let previous: Totals | undefined;
  let sampling: Promise<void> | undefined;
  const sample = () =>
    (sampling ??= (async () => {
      const now = await totals(metrics);
      if (previous) {
        const lagCount = now.lagCount - previous.lagCount;
        const claims = now.claims - previous.claims;
        const holds = now.holds - previous.holds;
        samples.push({
          at: new Date(),
          claims,
          holds,
          refusals: claims - holds,
          deliveryLagMs: lagCount > 0 ? ((now.lagSum - previous.lagSum) / lagCount) * 1000 : null,
        });
        if (samples.length > KEPT_SECONDS) samples.splice(0, samples.length - KEPT_SECONDS);
      }
      previous = now;
    })().finally(() => {
      sampling = undefined;
    }));
  const timer = setInterval(() => void sample().catch(() => {}), opts.intervalMs ?? 1000);
  timer.unref();
  void sample().catch(() => {});
  return {
    last: (seconds) => samples.slice(-Math.max(0, Math.min(seconds, KEPT_SECONDS))),
    reconcilerLastRunAt: async () => {
      const v = (await metrics.reconcilerLastRun.get()).values[0]?.value ?? 0;
      return v > 0 ? new Date(v * 1000) : null;
    },
    sample,
    stop: () => clearInterval(timer),
  };
}
