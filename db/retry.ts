/**
 * Failures after which nothing was committed, so the whole transaction may always be repeated: serialization failure,
 * deadlock, and connections that were refused before anything was sent.
 */
const CERTAIN = new Set(['40001', '40P01', '53300', '57P03', 'ECONNREFUSED', '08001', '08004']);
/**
 * Connections lost while a statement was in flight: it may have committed although the client saw an error. Repeating
 * is safe only for idempotent writes (placeOrder replays its key, releases and expiry are guarded transitions); a
 * non-idempotent one (restock adds units) must not be repeated, or it would apply twice.
 */
const AMBIGUOUS = new Set(['ECONNRESET', 'EPIPE', 'ETIMEDOUT', '57P01', '57P02']);

export type RetryOptions = {
  /** total attempts, first included */
  attempts?: number;
  baseDelayMs?: number;
  maxDelayMs?: number;
  /** told about every retry, e.g. to count it in metrics */
  onRetry?: (reason: string, attempt: number) => void;
  /** false for a non-idempotent write: a lost connection (which may have committed) then surfaces instead */
  idempotent?: boolean;
};

/** The reason a failure may be retried (its SQLSTATE or connection code), or null when it must surface. */
export function retryReason(err: unknown): string | null {
  const e = err as { code?: unknown; message?: unknown } | null;
  if (!e) return null;
  const code = typeof e.code === 'string' ? e.code : undefined;
  if (code && (CERTAIN.has(code) || AMBIGUOUS.has(code) || code.startsWith('08'))) return code;
  const message = typeof e.message === 'string' ? e.message : '';
  if (/Connection terminated|connection lost|Client has encountered a connection error/i.test(message))
    return 'connection';
  return null;
}

/** True when a failure leaves it unknown whether the statement committed (see AMBIGUOUS). */
export function isAmbiguous(reason: string): boolean {
  return !CERTAIN.has(reason);
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Runs `fn`, repeating the whole of it after a serialization failure, a deadlock or a lost connection:
 * bounded attempts, exponential backoff with full jitter.
 * @example await withRetry(() => pool.query('SELECT place_order(...)'), { onRetry: count })
 */
export async function withRetry<T>(fn: () => Promise<T>, opts: RetryOptions = {}): Promise<T> {
  const attempts = opts.attempts ?? 5;
  const base = opts.baseDelayMs ?? 5;
  const max = opts.maxDelayMs ?? 200;
  for (let attempt = 1; ; attempt++) {
    try {
      return await fn();
    } catch (err) {
      const reason = retryReason(err);
      if (!reason || attempt >= attempts) throw err;
      if (opts.idempotent === false && isAmbiguous(reason)) throw err;
      opts.onRetry?.(reason, attempt);
      await sleep(Math.random() * Math.min(max, base * 2 ** attempt));
    }
  }
}

/**
 * Failures that say the database cannot be reached or cannot take writes right now (a lost or refused connection, a
 * server shutting down or starting, no connection free in time, a read-only standby after a failover): nothing about
 * the request was wrong, and the same request with the same idempotency key may be sent again. Retries are exhausted
 * when this reaches a caller.
 */
export function isDatabaseUnavailable(err: unknown): boolean {
  const e = err as { code?: unknown; message?: unknown } | null;
  if (!e || typeof e !== 'object') return false;
  const code = typeof e.code === 'string' ? e.code : '';
  if (code === '25006' || code === '53300' || code.startsWith('57P') || code.startsWith('08')) return true;
  if (['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENOTFOUND'].includes(code)) return true;
  const message = typeof e.message === 'string' ? e.message : '';
  return /Connection terminated|connection lost|Client has encountered a connection error|timeout exceeded when trying to connect|not queryable/i.test(
    message,
  );
}

/**
 * Failures that say the database is too busy for this request right now: a lock or statement wait ran out (55P03,
 * 57014), a serialization failure or deadlock outlived its retries (40001, 40P01), or the server is short of a
 * resource (53xxx). The statement rolled back, so the request wrote nothing, and the same request with the same
 * idempotency key may be sent again later.
 */
export function isDatabaseBusy(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code !== 'string') return false;
  return ['55P03', '57014', '40001', '40P01'].includes(code) || code.startsWith('53');
}
