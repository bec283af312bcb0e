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
