// The one way tests and benchmarks run the real Node host (or another entry) as a child process: same command line,
// same ready check, same stop, and no child left behind when the parent dies.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { ROOT } from './root.js';

/**
 * The host's `lastunit listening on <bound address> (<who can reach it>): http://127.0.0.1:PORT/graphql` or the relay
 * CLI's `lastunit relay running`.
 */
export const READY =
  /lastunit listening on \S+ \([^)]*\): http:\/\/127\.0\.0\.1:(?<port>\d+)\/graphql|lastunit relay running/;

export type ServerOptions = {
  /** the entry, relative to the repository root (default node/start.ts) */
  script?: string;
  /** on top of this process's environment and the defaults PORT=0, LOG_LEVEL=warn, MARKETPLACE_SANDBOX=off, REDIS_KEY_PREFIX */
  env?: Record<string, string>;
  /** the line that says it is up; a group named `port` gives the port (absent: port 0, it listens on nothing) */
  ready?: RegExp;
  /** node flags before `--import tsx`, e.g. ['--cpu-prof'] */
  nodeArgs?: string[];
  startTimeoutMs?: number;
  /** told when it exits on its own after it was ready (not after stop()) */
  onUnexpectedExit?: (why: string) => void;
};

export type ServerProcess = {
  pid: number;
  /** 0 for an entry that listens on nothing (the relay) */
  port: number;
  /** http://127.0.0.1:PORT */
  url: string;
  /** http://127.0.0.1:PORT/graphql */
  endpoint: string;
  child: ChildProcess;
  /** the last TAIL_CHARS characters it printed (stdout and stderr), for error reports */
  output: () => string;
  /** sends `signal`, then SIGKILL after `graceMs`; resolves with the exit code (null when a signal ended it) */
  stop: (signal?: NodeJS.Signals, graceMs?: number) => Promise<number | null>;
};

const TAIL_CHARS = 64 * 1024;

// A crashed test run or bench must not leave servers behind: one 'exit' listener for every child still running.
const running = new Set<ChildProcess>();
let exitHookInstalled = false;
function killOnParentExit(child: ChildProcess) {
  if (!exitHookInstalled) {
    exitHookInstalled = true;
    process.once('exit', () => {
      for (const c of running) c.kill('SIGKILL');
    });
  }
  running.add(child);
  child.once('exit', () => running.delete(child));
}

// With REDIS_URL in the environment every server would share the default prefix with every other run on that Redis
// (another checkout's suite, a bench): the servers of this process get a prefix of their own, shared among them.
const REDIS_KEY_PREFIX = `lu_p${process.pid}_${randomBytes(3).toString('hex')}:`;

/**
 * A server given DATABASE_URL LISTENs on that database directly too (DATABASE_DIRECT_URL), as a production host
 * configured per docs/deploy.md does. When the URL is the suite's transaction pooler's (LASTUNIT_TEST_PGBOUNCER=on,
 * test/support/global-setup.ts), the direct URL is the same database on the server behind the pooler.
 */
function directUrlOf(env: Record<string, string> = {}): Record<string, string> {
  const url = env.DATABASE_URL;
  if (!url || env.DATABASE_DIRECT_URL !== undefined) return {};
  if (process.env.LASTUNIT_TEST_PGBOUNCER !== 'on') return { DATABASE_DIRECT_URL: url };
  const direct = new URL(url);
  if (!process.env.LASTUNIT_TEST_PG_DIRECT || direct.host !== process.env.LASTUNIT_TEST_PG_POOLER) return {};
  direct.host = process.env.LASTUNIT_TEST_PG_DIRECT;
  return { DATABASE_DIRECT_URL: direct.toString() };
}

/**
 * LASTUNIT_TEST_WEB_CONCURRENCY=N: every host a test starts runs N processes (.ci/run's pass against 2, npm run
 * test:processes), laid out as docs/deploy.md lays out such a host: with Redis (REDIS_URL, unless the test names its
 * own), through which its processes share live events and rate limits. Not a host the test pins to one process
 * (WEB_CONCURRENCY in its env: it measures one process), nor one with the in-process marketplace sandbox (one
 * process's, refused with more).
 */
function processesOf(script: string, env: Record<string, string> = {}): Record<string, string> {
  const n = process.env.LASTUNIT_TEST_WEB_CONCURRENCY;
  // MARKETPLACE_SANDBOX '' is the development default, in-process
  const inProcessSandbox = env.MARKETPLACE_SANDBOX === 'in-process' || env.MARKETPLACE_SANDBOX === '';
  if (!n || script !== 'node/start.ts' || !env.DATABASE_URL || inProcessSandbox) return {};
  return {
    WEB_CONCURRENCY: n,
    ...(env.REDIS_URL === undefined ? { REDIS_URL: process.env.REDIS_URL || 'redis://127.0.0.1:6379' } : {}),
  };
}

/**
 * The command line of an entry: `--import tsx <script>`, or for npm start's entry the test run's bundle of it when
 * there is one for this checkout (LASTUNIT_TEST_HOST_BUNDLE, kit/host-bundle.ts; another checkout's, as a test of a
 * fresh clone starts, is never used).
 */
function nodeCommand(script: string, nodeArgs: string[] = []) {
  const bundle = process.env.LASTUNIT_TEST_HOST_BUNDLE;
  if (script === 'node/start.ts' && bundle && process.env.LASTUNIT_TEST_HOST_BUNDLE_ROOT === ROOT)
    return [...nodeArgs, bundle];
  return [...nodeArgs, '--import', 'tsx', script];
}

/**
 * Starts `node --import tsx <script>` from the repository root and resolves once it prints its ready line; rejects
 * (with its output) if it exits, fails to spawn or is not ready within the timeout, and kills it then.
 * @example const s = await spawnServer({ env: { DATABASE_URL, API_KEYS } }); await fetch(s.endpoint, ...); await s.stop()
 */
export async function spawnServer(opts: ServerOptions = {}): Promise<ServerProcess> {
  const script = opts.script ?? 'node/start.ts';
  const ready = opts.ready ?? READY;
  const startTimeoutMs = opts.startTimeoutMs ?? 60_000;
  const child = spawn(process.execPath, nodeCommand(script, opts.nodeArgs), {
    cwd: ROOT,
    env: {
      ...process.env,
      PORT: '0',
      LOG_LEVEL: 'warn',
      MARKETPLACE_SANDBOX: 'off',
      REDIS_KEY_PREFIX: process.env.REDIS_KEY_PREFIX ?? REDIS_KEY_PREFIX,
      ...processesOf(script, opts.env),
      ...opts.env,
      ...directUrlOf(opts.env),
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  killOnParentExit(child);
  const exited = new Promise<number | null>((resolve) => {
    child.once('exit', (code) => resolve(code));
    child.once('error', () => child.pid === undefined && resolve(null)); // never started: no 'exit' will come
  });
  let tail = '';
  const keep = (chunk: Buffer) => {
    tail = (tail + chunk.toString('utf8')).slice(-TAIL_CHARS);
  };
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);

  let stopping = false;
  const stop = async (signal: NodeJS.Signals = 'SIGTERM', graceMs = 5_000) => {
    stopping = true;
    if (child.exitCode !== null || child.signalCode !== null) return exited;
    child.kill(signal);
    const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
    try {
      return await exited;
    } finally {
      clearTimeout(timer);
    }
  };

  try {
    const port = await new Promise<number>((resolve, reject) => {
      let seen = ''; // stdout until the ready line, bounded (a line is far shorter than what is kept)
      const timer = setTimeout(
        () => reject(new Error(`${script} was not ready within ${startTimeoutMs} ms`)),
        startTimeoutMs,
      );
      const onData = (chunk: Buffer) => {
        seen = (seen + chunk.toString('utf8')).slice(-TAIL_CHARS);
        const m = ready.exec(seen);
        if (!m) return;
        clearTimeout(timer);
        child.stdout!.off('data', onData);
        resolve(Number(m.groups?.port ?? 0));
      };
      child.stdout!.on('data', onData);
      child.once('error', (err) => {
        clearTimeout(timer);
        reject(err);
      });
      child.once('exit', (code, sig) => {
        clearTimeout(timer);
        // its last words may still be in the pipes: wait for them briefly (a grandchild may hold the pipes open)
        const fail = () => reject(new Error(`${script} exited before it was ready (code ${code}, signal ${sig})`));
        child.once('close', fail);
        setTimeout(fail, 200);
      });
    });
    child.once('exit', (code, sig) => {
      if (!stopping)
        opts.onUnexpectedExit?.(`${script} exited on its own (code ${code}, signal ${sig})\n${tail.slice(-2000)}`);
    });
    const url = `http://127.0.0.1:${port}`;
    return { pid: child.pid!, port, url, endpoint: `${url}/graphql`, child, output: () => tail, stop };
  } catch (err) {
    await stop('SIGKILL');
    throw new Error(`${(err as Error).message}\n--- ${script} output ---\n${tail}`);
  }
}

/**
 * Runs a one-shot `node --import tsx <script>` from the repository root to its end, `env` on top of this process's.
 * @example const r = runScript('node/migrate-cli.ts', { DATABASE_URL }); expect(r.status).toBe(0)
 */
export function runScript(script: string, env: Record<string, string>, timeoutMs = 60_000) {
  const r = spawnSync(process.execPath, nodeCommand(script), {
    cwd: ROOT,
    env: { ...process.env, ...env },
    encoding: 'utf8',
    timeout: timeoutMs,
  });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}
