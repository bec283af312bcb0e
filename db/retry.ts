/** SQLSTATEs after which the whole transaction is repeated: nothing it did was committed. */
const RETRYABLE_SQLSTATES = new Set(['40001', '40P01']);
/** Connection-level failures (lost, or refused as 53300 too many clients) before a commit was acknowledged; safe to repeat because every write is idempotent. */
const CONNECTION_CODES = new Set(['ECONNRESET', 'ECONNREFUSED', 'EPIPE', 'ETIMEDOUT', '57P01', '57P02', '57P03', '53300']);

export type RetryOptions = {
  /** total attempts, first included */
  attempts?: number;
  baseDelayMs?: number;
  maxDelayMs?: number;
  /** told about every retry, e.g. to count it in metrics */
  onRetry?: (reason: string, attempt: number) => void;
};

/** The reason a failure may be retried (its SQLSTATE or connection code), or null when it must surface. */
export function retryReason(err: unknown): string | null {
  const e = err as { code?: unknown; message?: unknown } | null;
  if (!e) return null;
  const code = typeof e.code === 'string' ? e.code : undefined;
  if (code && RETRYABLE_SQLSTATES.has(code)) return code;
  if (code && (CONNECTION_CODES.has(code) || code.startsWith('08'))) return code;
  const message = typeof e.message === 'string' ? e.message : '';
  if (/Connection terminated|connection lost|Client has encountered a connection error/i.test(message)) return 'connection';
  return null;
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
      opts.onRetry?.(reason, attempt);
      await sleep(Math.random() * Math.min(max, base * 2 ** attempt));
    }
  }
}
