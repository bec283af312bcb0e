// The counters every bench scenario reports, shared by the HTTP and the pg drivers.
import { Latencies } from '../kit/stats.js';

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
