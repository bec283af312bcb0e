// The real Node host as a child process (`node --import tsx node/start.ts`), on a port the OS picks, with its own keys.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const LISTENING = /lastunit listening on (http:\/\/127\.0\.0\.1:(\d+))\/graphql/;

export type ServerProcess = {
  pid: number;
  port: number;
  /** http://127.0.0.1:PORT/graphql */
  endpoint: string;
  keys: { storefront: string; admin: string };
  /** the last few KB the server printed, for error reports */
  output: () => string;
  /** SIGTERM, then SIGKILL after `graceMs`; resolves once the process is gone */
  stop: (graceMs?: number) => Promise<void>;
};

const randomKey = () => randomBytes(18).toString('base64url'); // 24 characters, no ':' or ','

function waitExit(child: ChildProcess, ms: number): Promise<boolean> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(true);
  return new Promise((resolve) => {
    const t = setTimeout(() => {
      child.off('exit', onExit);
      resolve(false);
    }, ms);
    const onExit = () => {
      clearTimeout(t);
      resolve(true);
    };
    child.once('exit', onExit);
  });
}

/**
 * Starts the server against `databaseUrl` and resolves when it prints its listening line.
 * @example const srv = await startServer({ databaseUrl }); ...; await srv.stop()
 */
export async function startServer(opts: {
  databaseUrl: string;
  startTimeoutMs?: number;
  extraEnv?: Record<string, string>;
  /** told when the server exits after it was listening and before stop() was called */
  onUnexpectedExit?: (why: string) => void;
}): Promise<ServerProcess> {
  const keys = { storefront: randomKey(), admin: randomKey() };
  const child = spawn(process.execPath, ['--import', 'tsx', 'node/start.ts'], {
    cwd: REPO_ROOT,
    env: {
      ...process.env,
      ...opts.extraEnv,
      DATABASE_URL: opts.databaseUrl,
      PORT: '0',
      API_KEYS: `storefront:${keys.storefront},admin:${keys.admin}`,
      LOG_LEVEL: 'warn',
      NODE_ENV: 'production',
      // the bench is one API client sending thousands of orders on purpose: lift the per-key rate limit for it
      RATE_LIMIT_PER_WINDOW: '100000000',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let tail = '';
  const keep = (chunk: Buffer) => {
    tail = (tail + chunk.toString('utf8')).slice(-8192);
  };
  // A crashed bench must not leave the server behind.
  const killOnExit = () => child.kill('SIGKILL');
  process.once('exit', killOnExit);

  let stopping = false;
  const stop = async (graceMs = 5_000) => {
    stopping = true;
    process.off('exit', killOnExit);
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGTERM');
    if (await waitExit(child, graceMs)) return;
    child.kill('SIGKILL');
    await waitExit(child, 5_000);
  };

  try {
    const port = await new Promise<number>((resolve, reject) => {
      let lineBuf = '';
      const timer = setTimeout(() => reject(new Error(`server did not start within ${opts.startTimeoutMs ?? 60_000} ms`)), opts.startTimeoutMs ?? 60_000);
      child.stdout!.on('data', (chunk: Buffer) => {
        keep(chunk);
        lineBuf += chunk.toString('utf8');
        const m = LISTENING.exec(lineBuf);
        if (m) {
          clearTimeout(timer);
          lineBuf = '';
          resolve(Number(m[2]));
        } else if (lineBuf.length > 65_536) lineBuf = lineBuf.slice(-1024);
      });
      child.stderr!.on('data', keep);
      child.once('error', (err) => {
        clearTimeout(timer);
        reject(err);
      });
      child.once('exit', (code, sig) => {
        clearTimeout(timer);
        reject(new Error(`server exited before listening (code ${code}, signal ${sig})`));
      });
    });
    child.once('exit', (code, sig) => {
      if (!stopping) opts.onUnexpectedExit?.(`the server exited during the bench (code ${code}, signal ${sig})\n${tail.slice(-2000)}`);
    });
    return {
      pid: child.pid!,
      port,
      endpoint: `http://127.0.0.1:${port}/graphql`,
      keys,
      output: () => tail,
      stop,
    };
  } catch (err) {
    await stop(2_000);
    throw new Error(`${(err as Error).message}\n--- server output ---\n${tail}`);
  }
}
