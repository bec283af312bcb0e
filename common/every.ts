// The timer loop every background worker (sweeper, reconciler, retention jobs) runs on.

/**
 * Runs `task` every `intervalMs`, never overlapping itself, until the returned stop function is called; stop waits
 * for a running task to finish.
 * @example const stop = every(1000, () => sweepOnce(db, metrics), (err) => log.error(err)); await stop()
 */
export function every(intervalMs: number, task: () => Promise<unknown>, onError: (err: unknown) => void) {
  let timer: ReturnType<typeof setTimeout> | undefined;
  let running: Promise<unknown> | undefined;
  let stopped = false;
  const tick = () => {
    running = task()
      .catch(onError)
      .finally(() => {
        if (!stopped) timer = setTimeout(tick, intervalMs);
      });
  };
  timer = setTimeout(tick, intervalMs);
  return async () => {
    stopped = true;
    clearTimeout(timer);
    await running;
  };
}

/**
 * One-shot timers that can all be cancelled at once (the sandboxes' delayed answers and deliveries): after `cancel()`
 * nothing scheduled runs and nothing new is scheduled.
 * @example const t = timers(); t.later(50, () => deliver(body)); ... t.cancel()
 */
export function timers() {
  const pending = new Set<ReturnType<typeof setTimeout>>();
  let cancelled = false;
  return {
    get cancelled() {
      return cancelled;
    },
    later(ms: number, fn: () => void): void {
      if (cancelled) return;
      const t = setTimeout(() => {
        pending.delete(t);
        fn();
      }, ms);
      pending.add(t);
    },
    cancel(): void {
      cancelled = true;
      for (const t of pending) clearTimeout(t);
      pending.clear();
    },
  };
}
