// Latency samples and percentiles, in one place for the tests and the benchmarks (one percentile rule everywhere).

/**
 * The nearest-rank percentile (p in 0..100) of samples sorted ascending; 0 for no samples.
 * @example percentile([1, 2, 3, 4], 50) // 2
 */
export function percentile(sorted: ArrayLike<number>, p: number): number {
  if (!sorted.length) return 0;
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank]!;
}

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
    return ps.map((p) => round(percentile(sorted, p), 2));
  }
}

export const round = (n: number, digits = 1) => {
  const f = 10 ** digits;
  return Math.round(n * f) / f;
};
