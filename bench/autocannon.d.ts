// The part of autocannon's programmatic API the bench uses (the package ships no types).
declare module 'autocannon' {
  import type { EventEmitter } from 'node:events';

  export type Request = {
    method?: string;
    path?: string;
    headers?: Record<string, string>;
    body?: string | Buffer;
    /** called before every request with the request about to be sent; returns the request to send */
    setupRequest?: (req: Request, context: Record<string, unknown>) => Request | null | undefined;
    onResponse?: (
      status: number,
      body: string,
      context: Record<string, unknown>,
      headers: Record<string, unknown>,
    ) => void;
  };

  export type Options = {
    url: string;
    connections?: number;
    /** seconds; ignored when `amount` is set */
    duration?: number;
    amount?: number;
    /** per-request timeout in seconds */
    timeout?: number;
    pipelining?: number;
    /** ms between samples (default 1000); the duration's end is noticed at a sample */
    sampleInt?: number;
    requests?: Request[];
  };

  export type Result = {
    errors: number;
    timeouts: number;
    non2xx: number;
    requests: { average: number; total: number };
    latency: { p50: number; p99: number; average: number };
  };

  export type Instance = EventEmitter & { stop: () => void };

  function autocannon(opts: Options, cb: (err: Error | null, result: Result) => void): Instance;
  export default autocannon;
}
