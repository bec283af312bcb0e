// Starts (or connects to) one PostgreSQL for the whole run and builds a migrated template database;
// each test file then clones its own database from it (test/support/db.ts). With LASTUNIT_TEST_PGBOUNCER=on it also
// starts one PgBouncer in transaction mode (kit/pgbouncer.ts) in front of it, and every file's database URL is the
// pooler's: the suites chosen so run through it (.ci/run does this for the core suites).
import type { TestProject } from 'vitest/node';
import pg from 'pg';
import os from 'node:os';
import path from 'node:path';
import { rm } from 'node:fs/promises';
import { startEmbeddedPostgres, type EmbeddedDb } from '../../db/embedded.js';
import { createDb } from '../../db/pool.js';
import { migrate } from '../../db/migrate.js';
import { DEFAULTS } from '../../kit/config-defaults.js';
import { startPgBouncer } from '../../kit/pgbouncer.js';
import { buildHostBundle, hostBundlePath } from '../../kit/host-bundle.js';
import { ROOT } from '../../kit/root.js';

declare module 'vitest' {
  export interface ProvidedContext {
    pgAdminUrl: string;
    pgTemplate: string;
    /** PgBouncer's port with LASTUNIT_TEST_PGBOUNCER=on, else 0 */
    pgPoolerPort: number;
  }
}

type Shared = { adminUrl: string; template: string; poolerPort: number; users: number; stop: () => Promise<void> };
// Each vitest project (vitest.config.ts) runs this setup: the first starts the database, the others share it, the last
// to finish stops it.
const SHARED = Symbol.for('lastunit.test.database');
const holder = globalThis as unknown as { [SHARED]?: Promise<Shared> };

async function startShared(): Promise<Shared> {
  let embedded: EmbeddedDb | undefined;
  let embeddedDir: string | undefined;
  let adminUrl = process.env.DATABASE_URL;
  if (!adminUrl) {
    embeddedDir = path.join(os.tmpdir(), `lastunit-test-pg-${process.pid}`);
    embedded = await startEmbeddedPostgres({ dir: embeddedDir, database: 'postgres', persistent: false });
    adminUrl = embedded.url;
  }
  const template = `lastunit_tpl_${process.pid}_${Date.now().toString(36)}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${template}`);
  const url = new URL(adminUrl);
  url.pathname = `/${template}`;
  const db = createDb({ connectionString: url.toString(), max: 1, timeouts: DEFAULTS.database.timeouts });
  await migrate(db);
  await db.end();
  await admin.end();
  // npm start's entry bundled once for the run's ~70 server starts (kit/host-bundle.ts); they inherit where it is
  const bundle = hostBundlePath(String(process.pid));
  const removeBundle = await buildHostBundle(bundle);
  process.env.LASTUNIT_TEST_HOST_BUNDLE = bundle;
  process.env.LASTUNIT_TEST_HOST_BUNDLE_ROOT = ROOT;
  const pooler =
    process.env.LASTUNIT_TEST_PGBOUNCER === 'on' ? await startPgBouncer(adminUrl, { poolSize: 40 }) : undefined;
  if (pooler) {
    // what a host started behind this pooler LISTENs on directly (kit/server.ts: DATABASE_DIRECT_URL, as docs/deploy.md
    // configures one); the workers and the servers they start inherit it
    process.env.LASTUNIT_TEST_PG_POOLER = `127.0.0.1:${pooler.port}`;
    process.env.LASTUNIT_TEST_PG_DIRECT = new URL(adminUrl).host;
  }
  const stop = async () => {
    await removeBundle();
    await pooler?.stop();
    const c = new pg.Client({ connectionString: adminUrl });
    await c.connect();
    const { rows } = await c.query<{ datname: string }>(
      `SELECT datname FROM pg_database WHERE datname = $1 OR datname LIKE $2`,
      [template, `lu_t_${process.pid}_%`],
    );
    for (const r of rows) await c.query(`DROP DATABASE IF EXISTS ${r.datname} WITH (FORCE)`).catch(() => {});
    await c.end();
    await embedded?.stop();
    if (embeddedDir) await rm(embeddedDir, { recursive: true, force: true });
  };
  return { adminUrl, template, poolerPort: pooler?.port ?? 0, users: 0, stop };
}

export async function setup(project: TestProject) {
  const shared = await (holder[SHARED] ??= startShared());
  shared.users++;
  project.provide('pgAdminUrl', shared.adminUrl);
  project.provide('pgTemplate', shared.template);
  project.provide('pgPoolerPort', shared.poolerPort);
  return async () => {
    if (--shared.users === 0) await shared.stop();
  };
}
