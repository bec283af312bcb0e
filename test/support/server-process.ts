import { spawn, type ChildProcess } from 'node:child_process';

export type ServerProcess = { url: string; port: number; stdout: () => string; proc: ChildProcess; stop: (signal?: NodeJS.Signals) => Promise<number | null> };

/**
 * Starts the real Node host (`node/start.ts`, what `npm start` runs) as a child process and waits for its
 * "lastunit listening on" line.
 * @example const s = await startServerProcess({ PORT: '0', DATA_DIR: dir })
 */
export async function startServerProcess(env: Record<string, string>, timeoutMs = 60_000): Promise<ServerProcess> {
  const proc = spawn(process.execPath, ['--import', 'tsx', 'node/start.ts'], {
    env: { ...process.env, LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  proc.stdout!.on('data', (d) => (out += d));
  proc.stderr!.on('data', (d) => (err += d));
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`server did not start in ${timeoutMs} ms:\n${out}\n${err}`)), timeoutMs);
    const check = () => {
      const m = /lastunit listening on http:\/\/127\.0\.0\.1:(\d+)\/graphql/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve(Number(m[1]));
      }
    };
    proc.stdout!.on('data', check);
    proc.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`server exited with ${code}:\n${out}\n${err}`));
    });
  });
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    proc,
    stdout: () => out,
    stop: (signal = 'SIGTERM') =>
      new Promise((resolve) => {
        if (proc.exitCode !== null) return resolve(proc.exitCode);
        const kill = setTimeout(() => proc.kill('SIGKILL'), 20_000);
        proc.once('exit', (code) => {
          clearTimeout(kill);
          resolve(code);
        });
        proc.kill(signal);
      }),
  };
}
