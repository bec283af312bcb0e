// Starts (or connects to) one PostgreSQL for the whole run and builds a migrated template database;
// each test file then clones its own database from it (test/support/db.ts).
import type { TestProject } from 'vitest/node';
import pg from 'pg';
import os from 'node:os';
import path from 'node:path';
import { rm } from 'node:fs/promises';
import { startEmbeddedPostgres, type EmbeddedDb } from '../../db/embedded.js';
import { createDb } from '../../db/pool.js';
import { migrate } from '../../db/migrate.js';
import { DEFAULTS } from '../../kit/config-defaults.js';

declare module 'vitest' {
  export interface ProvidedContext {
    pgAdminUrl: string;
    pgTemplate: string;
  }
}

type Shared = { adminUrl: string; template: string; users: number; stop: () => Promise<void> };
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
  const stop = async () => {
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
  return { adminUrl, template, users: 0, stop };
}

export async function setup(project: TestProject) {
  const shared = await (holder[SHARED] ??= startShared());
  shared.users++;
  project.provide('pgAdminUrl', shared.adminUrl);
  project.provide('pgTemplate', shared.template);
  return async () => {
    if (--shared.users === 0) await shared.stop();
  };
}
