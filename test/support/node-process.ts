import { spawn, type ChildProcess } from 'node:child_process';

export type NodeProcess = { url: string; port: number; child: ChildProcess; output: () => string; stop: () => Promise<void> };

/**
 * A real server process (`node --import tsx node/start.ts`) with `env` on top of this one's, PORT=0; resolves when it
 * prints `lastunit listening on http://127.0.0.1:PORT/graphql`.
 * @example const a = await spawnNode({ DATABASE_URL, API_KEYS, REDIS_URL })
 */
export async function spawnNode(env: Record<string, string>, script = 'node/start.ts'): Promise<NodeProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', script], {
    env: { ...process.env, PORT: '0', LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (out += d));
  const stop = () =>
    new Promise<void>((resolve) => {
      if (child.exitCode !== null || child.signalCode !== null) return resolve();
      const kill = setTimeout(() => child.kill('SIGKILL'), 5000);
      child.once('exit', () => {
        clearTimeout(kill);
        resolve();
      });
      child.kill('SIGTERM');
    });
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${script} did not start in 60 s:\n${out}`)), 60_000);
    const onData = () => {
      const m = /listening on http:\/\/127\.0\.0\.1:(\d+)\/graphql/.exec(out) ?? (/relay running/.test(out) ? [, '0'] : null);
      if (m) {
        clearTimeout(timer);
        resolve(Number(m[1]));
      }
    };
    child.stdout!.on('data', onData);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`${script} exited with ${code}:\n${out}`));
    });
  });
  return { url: `http://127.0.0.1:${port}`, port, child, output: () => out, stop };
}
