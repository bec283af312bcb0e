// Every Node command-line entry (npm start, the workers, the sandbox, the migrator) starts and stops the same way.
import { ConfigError } from '../common/config-reader.js';
import { onShutdownSignal } from './shutdown.js';

export type Running = {
  /** lines printed once it runs (where it listens, demo keys) */
  lines?: string[];
  /** stops it cleanly; called once, on SIGINT/SIGTERM (or right away for a one-shot entry) */
  stop: () => Promise<void>;
};

/**
 * Runs an entry: reads its configuration once from the environment (a ConfigError prints every bad variable and exits
 * with code 2, any other start failure exits 1), registers the shutdown signal handler before anything starts (a signal
 * during start-up waits for it, then stops cleanly), starts it and prints its lines. A `oneShot` entry is stopped as
 * soon as it has started, and the process exits 0.
 * @example runEntry({ config: loadConfig, start: async (c) => { const h = await startNodeHost(c); return { stop: h.stop } } })
 */
export function runEntry<C>(entry: {
  config: (env: Record<string, string | undefined>) => C;
  start: (config: C) => Promise<Running>;
  oneShot?: boolean;
}): Promise<void> {
  const out = (line: string) => console.log(line);
  let starting: Promise<Running> | undefined;
  return (async () => {
    const config = entry.config(process.env);
    onShutdownSignal(async () => (await starting)?.stop(), out);
    starting = entry.start(config);
    const running = await starting;
    if (running.lines?.length) out(running.lines.join('\n'));
    if (entry.oneShot) {
      await running.stop();
      process.exit(0);
    }
  })().catch((err) => {
    console.error(err instanceof ConfigError ? err.message : err);
    process.exit(err instanceof ConfigError ? 2 : 1);
  });
}
