// Latency samples and the counters every scenario reports, shared by the HTTP and the pg drivers.

/** Response times in milliseconds; bounded by the number of requests a scenario may make. */
export class Latencies {
  private samples: number[] = [];
  constructor(private readonly limit = 2_000_000) {}

  record(ms: number) {
    if (this.samples.length < this.limit) this.samples.push(ms);
  }

  get count() {
    return this.samples.length;
  }

  merge(other: Latencies) {
    for (const ms of other.samples) this.record(ms);
  }

  /** Nearest-rank percentiles (p in 0..100), rounded to 0.01 ms. */
  percentiles(...ps: number[]): number[] {
    const sorted = Float64Array.from(this.samples).sort();
    return ps.map((p) => {
      if (!sorted.length) return 0;
      const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
      return Math.round(sorted[rank]! * 100) / 100;
    });
  }
}

/** What a closed-loop run saw from the client side. */
export type LoadOutcome = {
  requests: number;
  /** successful claims (RESERVED / a returned row) */
  claimed: number;
  /** told SOLD_OUT / INSUFFICIENT_STOCK (or the naive read found nothing left) */
  refused: number;
  /** transport failures, timeouts, non-2xx, GraphQL `errors`, unparsable or unexpected answers */
  errors: number;
  errorSamples: string[];
  elapsedS: number;
  latency: Latencies;
};

export function newOutcome(): LoadOutcome {
  return { requests: 0, claimed: 0, refused: 0, errors: 0, errorSamples: [], elapsedS: 0, latency: new Latencies() };
}

export function noteError(o: LoadOutcome, what: string) {
  o.errors++;
  if (o.errorSamples.length < 5) o.errorSamples.push(what.slice(0, 300));
}

/** Adds the figures of one more round of the same scenario to `into`. */
export function mergeOutcome<T extends LoadOutcome>(into: T, from: T): T {
  into.requests += from.requests;
  into.claimed += from.claimed;
  into.refused += from.refused;
  into.errors += from.errors;
  into.errorSamples.push(...from.errorSamples.slice(0, 5 - into.errorSamples.length));
  into.elapsedS += from.elapsedS;
  into.latency.merge(from.latency);
  return into;
}

export const round = (n: number, digits = 1) => {
  const f = 10 ** digits;
  return Math.round(n * f) / f;
};
