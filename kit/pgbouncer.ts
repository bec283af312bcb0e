// Debian's PgBouncer (/usr/sbin/pgbouncer) in transaction mode in front of a PostgreSQL, for tests and drills: the
// pooler Neon's pooled endpoint and most managed offerings are. Its own free port and temporary directory; as root it
// runs as the `postgres` user (PgBouncer refuses to run as root).
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chown, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

export const PGBOUNCER_BIN = process.env.PGBOUNCER_BIN ?? '/usr/sbin/pgbouncer';

export type PgBouncer = {
  port: number;
  /** `url` with its host and port replaced by PgBouncer's (same user, password and database) */
  urlOf: (url: string) => string;
  /** what PgBouncer logged so far */
  log: () => Promise<string>;
  stop: () => Promise<void>;
};

/** True when Debian's pgbouncer is installed here. */
export const havePgBouncer = () => existsSync(PGBOUNCER_BIN);

/** A TCP port that was free a moment ago on 127.0.0.1. */
export async function freePort(): Promise<number> {
  const s = net.createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', () => r()));
  const { port } = s.address() as net.AddressInfo;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

/** The uid and gid of `user` (id -u / id -g), to drop root for a program that refuses it. */
export function userIds(user: string): { uid: number; gid: number } {
  const id = (flag: string) => Number(spawnSync('id', [flag, user], { encoding: 'utf8' }).stdout.trim());
  return { uid: id('-u'), gid: id('-g') };
}

async function waitForPort(port: number, child: ChildProcess, timeoutMs: number) {
  const until = Date.now() + timeoutMs;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`pgbouncer exited (code ${child.exitCode})`);
    const ok = await new Promise<boolean>((resolve) => {
      const c = net.connect(port, '127.0.0.1');
      c.once('connect', () => resolve(c.end() && true));
      c.once('error', () => resolve(false));
    });
    if (ok) return;
    if (Date.now() > until) throw new Error(`pgbouncer did not listen on ${port} within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * Starts PgBouncer (pool_mode=transaction) in front of the server `url` points at; every database of that server is
 * reachable through it under its own name. Authentication: trust, or md5 with the URL's password.
 * @example const pb = await startPgBouncer(adminUrl); const pooled = pb.urlOf(testDbUrl); ... await pb.stop()
 */
export async function startPgBouncer(
  url: string,
  opts: { poolSize?: number; maxClientConn?: number } = {},
): Promise<PgBouncer> {
  const target = new URL(url);
  const user = decodeURIComponent(target.username || 'postgres');
  const password = decodeURIComponent(target.password);
  const dir = await mkdtemp(path.join(os.tmpdir(), 'lastunit-pgbouncer-'));
  const port = await freePort();
  const asRoot = process.getuid?.() === 0;
  const ids = asRoot ? userIds('postgres') : undefined;
  const logFile = path.join(dir, 'pgbouncer.log');
  const ini = [
    '[databases]',
    `* = host=${target.hostname} port=${target.port || 5432}`,
    '[pgbouncer]',
    'listen_addr = 127.0.0.1',
    `listen_port = ${port}`,
    'unix_socket_dir =',
    `auth_type = ${password ? 'md5' : 'trust'}`,
    `auth_file = ${path.join(dir, 'users.txt')}`,
    'pool_mode = transaction',
    `default_pool_size = ${opts.poolSize ?? 20}`,
    `max_client_conn = ${opts.maxClientConn ?? 2000}`,
    `logfile = ${logFile}`,
    'admin_users = ',
    'server_reset_query =',
    '',
  ].join('\n');
  await writeFile(path.join(dir, 'pgbouncer.ini'), ini);
  await writeFile(path.join(dir, 'users.txt'), `"${user}" "${password.replace(/"/g, '""')}"\n`);
  if (ids) {
    await chown(dir, ids.uid, ids.gid);
    for (const f of ['pgbouncer.ini', 'users.txt']) await chown(path.join(dir, f), ids.uid, ids.gid);
  }
  const child = spawn(PGBOUNCER_BIN, [path.join(dir, 'pgbouncer.ini')], {
    stdio: ['ignore', 'ignore', 'pipe'],
    ...(ids ? { uid: ids.uid, gid: ids.gid } : {}),
  });
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => {
    stderr = (stderr + d.toString()).slice(-8000);
  });
  const kill = () => child.kill('SIGKILL');
  process.once('exit', kill);
  const log = async () => `${await readFile(logFile, 'utf8').catch(() => '')}${stderr}`;
  try {
    await waitForPort(port, child, 10_000);
  } catch (err) {
    kill();
    throw new Error(`${(err as Error).message}\n${await log()}`);
  }
  return {
    port,
    urlOf: (u) => {
      const x = new URL(u);
      x.hostname = '127.0.0.1';
      x.port = String(port);
      return x.toString();
    },
    log,
    stop: async () => {
      process.off('exit', kill);
      if (child.exitCode === null) {
        const exited = new Promise((r) => child.once('exit', r));
        child.kill('SIGTERM');
        await exited;
      }
      await rm(dir, { recursive: true, force: true });
    },
  };
}
