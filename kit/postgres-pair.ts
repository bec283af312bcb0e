// A private PostgreSQL primary and streaming standby from Debian's binaries (/usr/lib/postgresql/15/bin), for the
// failover drill (kit/failover.ts): initdb, pg_basebackup -R, synchronous_standby_names for the synchronous variant.
// As root every binary runs as the `postgres` user in a directory under the temp dir that user owns.
import { spawn, spawnSync } from 'node:child_process';
import { appendFile, chown, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { freePort, userIds } from './pgbouncer.js';
import { startTcpProxy, type TcpProxy } from './tcp-proxy.js';

export const PG_BIN = process.env.PG_BIN ?? '/usr/lib/postgresql/15/bin';

export type PostgresPair = {
  dir: string;
  primaryPort: number;
  standbyPort: number;
  /** postgres://postgres@127.0.0.1:<port>/<database> */
  urlAt: (port: number, database?: string) => string;
  /** SIGKILLs the primary's postmaster and every process it started (a lost machine, not a shutdown) */
  killPrimary: () => void;
  /** pg_ctl promote -w on the standby */
  promoteStandby: () => Promise<void>;
  stop: () => Promise<void>;
};

const ids = () => (process.getuid?.() === 0 ? userIds('postgres') : undefined);

/** Runs a PostgreSQL binary (as postgres when root) and resolves with its output; rejects when it fails. */
function run(bin: string, args: string[], cwd: string): Promise<string> {
  const u = ids();
  return new Promise((resolve, reject) => {
    const child = spawn(path.join(PG_BIN, bin), args, {
      cwd,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, LC_ALL: 'C', PGUSER: 'postgres' },
      ...(u ? { uid: u.uid, gid: u.gid } : {}),
    });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    child.once('error', reject);
    child.once('exit', (code) => (code === 0 ? resolve(out) : reject(new Error(`${bin} ${args.join(' ')}: ${out}`))));
  });
}

/** The pids of `pid`'s children (ps --ppid), to end exactly the processes this drill started. */
const childrenOf = (pid: number) =>
  spawnSync('ps', ['--ppid', String(pid), '-o', 'pid='], { encoding: 'utf8' })
    .stdout.split('\n')
    .map((s) => Number(s.trim()))
    .filter((n) => n > 0);

/**
 * Starts the pair. `synchronous`: the primary waits for the standby's flush before a COMMIT returns
 * (synchronous_standby_names, synchronous_commit = on). `replicationDelayMs`: the standby's WAL stream goes through a
 * TCP proxy that delays what the primary sends, so an asynchronous standby is visibly behind.
 * @example const pair = await startPostgresPair({ synchronous: true }); pair.killPrimary(); await pair.promoteStandby()
 */
export async function startPostgresPair(opts: { synchronous: boolean; replicationDelayMs?: number }) {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'lastunit-failover-'));
  const u = ids();
  if (u) await chown(dir, u.uid, u.gid);
  const primary = path.join(dir, 'primary');
  const standby = path.join(dir, 'standby');
  const [primaryPort, standbyPort] = [await freePort(), await freePort()];
  await run('initdb', ['-D', primary, '-U', 'postgres', '--auth=trust', '--no-sync', '-E', 'UTF8'], dir);
  const common = [
    `listen_addresses = '127.0.0.1'`,
    `unix_socket_directories = '${dir}'`,
    'max_connections = 200',
    'shared_buffers = 32MB',
    'wal_level = replica',
    'max_wal_senders = 5',
    'wal_keep_size = 256MB',
    'synchronous_commit = on',
    'fsync = on',
    `log_min_messages = warning`,
  ];
  await appendFile(
    path.join(primary, 'postgresql.conf'),
    `${[...common, `port = ${primaryPort}`, `synchronous_standby_names = '${opts.synchronous ? 'standby1' : ''}'`].join('\n')}\n`,
  );
  await run('pg_ctl', ['-D', primary, '-l', path.join(dir, 'primary.log'), '-w', 'start'], dir);
  let replication: TcpProxy | undefined;
  let upstreamPort = primaryPort;
  if (opts.replicationDelayMs) {
    replication = await startTcpProxy({ host: '127.0.0.1', port: primaryPort }, 0, {
      delayDownstreamMs: opts.replicationDelayMs,
    });
    upstreamPort = replication.port;
  }
  await run(
    'pg_basebackup',
    ['-h', '127.0.0.1', '-p', String(primaryPort), '-U', 'postgres', '-D', standby, '-R', '-X', 'stream', '--no-sync'],
    dir,
  );
  await appendFile(
    path.join(standby, 'postgresql.auto.conf'),
    `primary_conninfo = 'host=127.0.0.1 port=${upstreamPort} user=postgres application_name=standby1'\n`,
  );
  await appendFile(path.join(standby, 'postgresql.conf'), `port = ${standbyPort}\nsynchronous_standby_names = ''\n`);
  await run('pg_ctl', ['-D', standby, '-l', path.join(dir, 'standby.log'), '-w', 'start'], dir);

  // a drill that crashes must not leave its servers behind: stopped synchronously when this process exits
  const onExit = () => {
    for (const d of [primary, standby])
      spawnSync(path.join(PG_BIN, 'pg_ctl'), ['-D', d, '-m', 'immediate', 'stop'], {
        cwd: dir,
        stdio: 'ignore',
        ...(u ? { uid: u.uid, gid: u.gid } : {}),
      });
  };
  process.once('exit', onExit);
  const urlAt = (port: number, database = 'postgres') => `postgres://postgres@127.0.0.1:${port}/${database}`;
  let primaryDead = false;
  const killPrimary = () => {
    const pid = Number(spawnSync('head', ['-1', path.join(primary, 'postmaster.pid')], { encoding: 'utf8' }).stdout);
    const kids = childrenOf(pid);
    for (const p of [pid, ...kids]) {
      try {
        process.kill(p, 'SIGKILL');
      } catch {
        // already gone
      }
    }
    primaryDead = true;
  };
  const pair: PostgresPair = {
    dir,
    primaryPort,
    standbyPort,
    urlAt,
    killPrimary,
    promoteStandby: async () => {
      await run('pg_ctl', ['-D', standby, '-w', 'promote'], dir);
    },
    stop: async () => {
      process.off('exit', onExit);
      for (const d of primaryDead ? [standby] : [primary, standby])
        await run('pg_ctl', ['-D', d, '-m', 'immediate', '-w', 'stop'], dir).catch(() => {});
      await replication?.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
  return pair;
}
