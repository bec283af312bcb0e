// WEB_CONCURRENCY > 1: the primary process of `npm start`, which forks that many Node host processes (node:cluster)
// serving one port, each with its own pool, claim batcher and relay, and stops them all on one signal. The database
// decides every sale, so what one process's batcher does not see another's cannot oversell (docs/deploy.md).
import cluster, { type Worker } from 'node:cluster';
import type { Config } from './config.js';
import { startSandbox, type Sandbox } from '../payments/sandbox-server.js';

/** What a host process tells the primary once it listens. */
export type WorkerReady = { type: 'lastunit:ready'; port: number; url: string; lines: string[] };

const isReady = (m: unknown): m is WorkerReady =>
  typeof m === 'object' && m !== null && (m as { type?: unknown }).type === 'lastunit:ready';

/** In a host process forked by the primary: tells it where this process listens and what to print. */
export function reportReady(ready: Omit<WorkerReady, 'type'>) {
  process.send?.({ type: 'lastunit:ready', ...ready } satisfies WorkerReady);
}

/** True in a host process the primary forked. */
export const isClusterWorker = () => cluster.isWorker;

/** How long a host process gets to stop on SIGTERM before it is killed. */
const STOP_GRACE_MS = 30_000;
/** A process that exits on its own is started again after this (not in a tight loop when it cannot start). */
const RESTART_DELAY_MS = 1_000;

/**
 * Forks `config.http.processes` host processes of this entry and resolves once every one listens, with the first
 * one's lines. A process that exits on its own afterwards is started again. With the sandbox processor and no
 * SANDBOX_PAYMENTS_URL, the sandbox runs here, in the primary, so every process talks to the same one (a payment
 * authorized through one process is found by another's reconciler).
 * @example const running = await startCluster(config) // { lines, stop }
 */
export async function startCluster(config: Config): Promise<{ lines: string[]; stop: () => Promise<void> }> {
  const n = config.http.processes;
  let sandbox: Sandbox | undefined;
  const env: Record<string, string> = {};
  if (config.payments.provider === 'sandbox' && !config.payments.sandboxUrl) {
    sandbox = await startSandbox({ webhookSecret: config.payments.webhookSecret });
    env.SANDBOX_PAYMENTS_URL = sandbox.url;
    env.PAYMENT_WEBHOOK_SECRET = config.payments.webhookSecret;
  }
  let stopping = false;
  const workers = new Set<Worker>();
  const fork = (): Worker => {
    const w = cluster.fork(env);
    workers.add(w);
    w.once('exit', (code, signal) => {
      workers.delete(w);
      if (stopping) return;
      console.error(`lastunit host process ${w.process.pid} exited (code ${code}, signal ${signal}); starting another`);
      setTimeout(() => !stopping && fork(), RESTART_DELAY_MS).unref();
    });
    return w;
  };
  const stop = async () => {
    stopping = true;
    await Promise.all(
      [...workers].map(
        (w) =>
          new Promise<void>((resolve) => {
            if (w.isDead()) return resolve();
            const timer = setTimeout(() => w.process.kill('SIGKILL'), STOP_GRACE_MS);
            w.once('exit', () => {
              clearTimeout(timer);
              resolve();
            });
            w.process.kill('SIGTERM');
          }),
      ),
    );
    await sandbox?.close();
  };
  try {
    const ready = await Promise.all(
      Array.from(
        { length: n },
        () =>
          new Promise<WorkerReady>((resolve, reject) => {
            const w = fork();
            w.on('message', (m) => isReady(m) && resolve(m));
            w.once('exit', (code) => reject(new Error(`a host process exited before it listened (code ${code})`)));
          }),
      ),
    );
    const first = ready[0]!;
    sandbox?.configure({ webhookUrl: `${first.url}/webhooks/payments/sandbox` });
    const [listening, ...rest] = first.lines;
    return {
      lines: [
        listening!,
        `processes: ${n} (WEB_CONCURRENCY), pids ${[...workers].map((w) => w.process.pid).join(' ')}`,
        ...rest,
      ],
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}
