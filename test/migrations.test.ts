// Migrations are append-only and checksummed, functions are re-applied every time, and concurrent migrators queue.
import { afterAll, describe, expect, inject, it } from 'vitest';
import { spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { appendFile, cp, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { createDb, type Db } from '../db/pool.js';
import { FUNCTIONS_DIR, MIGRATIONS_DIR, migrate } from '../db/migrate.js';
import { DEFAULTS } from '../kit/config-defaults.js';

const API_KEYS = 'storefront:migrations_storefront,admin:migrations_admin';
const cleanups: (() => Promise<void>)[] = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
});

/** An EMPTY database of this test's own (not the migrated template), dropped after the file. */
async function emptyDatabase(): Promise<{ url: string; pool: (max?: number) => Db }> {
  const adminUrl = inject('pgAdminUrl');
  // the lu_t_<pid>_ prefix of test/support/db.ts, so the run's teardown drops it even if this file dies first
  const name = `lu_t_${inject('pgTemplate').split('_')[2]}_mig_${randomBytes(5).toString('hex')}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  const pools: Db[] = [];
  cleanups.push(async () => {
    await Promise.all(pools.map((p) => p.end()));
    const c = new pg.Client({ connectionString: adminUrl });
    await c.connect();
    await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await c.end();
  });
  return {
    url: url.toString(),
    pool: (max = 2) => {
      const db = createDb({ connectionString: url.toString(), max, timeouts: DEFAULTS.database.timeouts });
      pools.push(db);
      return db;
    },
  };
}

/** `node --import tsx <script>` with DATABASE_URL and API_KEYS: its exit code and everything it printed. */
function runNode(script: string, databaseUrl: string): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', script], {
      env: { ...process.env, DATABASE_URL: databaseUrl, API_KEYS, PORT: '0', LOG_LEVEL: 'warn' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (d) => (output += d));
    child.stderr.on('data', (d) => (output += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), 50_000);
    child.once('error', reject);
    child.once('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, output });
    });
  });
}

const sqlFiles = async (dir: string) => (await readdir(dir)).filter((f) => f.endsWith('.sql')).sort();
const withoutComments = (sql: string) => sql.replace(/--.*$/gm, '');
const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

/** The schema as PostgreSQL holds it: tables with their columns, every constraint, index and function definition. */
async function schemaOf(db: Db): Promise<string[]> {
  const { rows } = await db.query<{ item: string }>(`
    SELECT 'column ' || table_name || '.' || column_name || ' ' || data_type || ' ' || is_nullable || ' ' || coalesce(column_default, '') AS item
      FROM information_schema.columns WHERE table_schema = 'public' AND table_name <> 'schema_migrations'
    UNION ALL
    SELECT 'constraint ' || conrelid::regclass || ' ' || conname || ' ' || pg_get_constraintdef(oid)
      FROM pg_constraint WHERE connamespace = 'public'::regnamespace AND conrelid <> 'schema_migrations'::regclass
    UNION ALL
    SELECT 'index ' || indexdef FROM pg_indexes WHERE schemaname = 'public' AND tablename <> 'schema_migrations'
    UNION ALL
    SELECT 'function ' || pg_get_functiondef(oid) FROM pg_proc WHERE pronamespace = 'public'::regnamespace
    ORDER BY 1`);
  return rows.map((r) => r.item);
}

const functionNames = async (db: Db) =>
  (await db.query<{ proname: string }>(`SELECT proname FROM pg_proc WHERE pronamespace = 'public'::regnamespace`)).rows
    .map((r) => r.proname)
    .sort();

describe('concurrent migrators', () => {
  it('two separate pools migrating one empty database at once both succeed, and the schema exists once', async () => {
    const target = await emptyDatabase();
    // Four pools, not one: each migrator has its own connection, as separate processes would.
    const results = await Promise.allSettled([1, 2, 3, 4].map(() => migrate(target.pool(1))));
    expect(results.map((r) => (r.status === 'rejected' ? String(r.reason) : 'ok'))).toEqual(['ok', 'ok', 'ok', 'ok']);
    // exactly one of them applied the table migration; the others queued on the lock and found it done
    const applied = results.flatMap((r) => (r.status === 'fulfilled' ? r.value : []));
    expect(applied).toEqual(await sqlFiles(MIGRATIONS_DIR));
    const db = target.pool();
    const { rows } = await db.query(`SELECT name, checksum FROM schema_migrations ORDER BY name`);
    expect(rows).toEqual(
      await Promise.all(
        (await sqlFiles(MIGRATIONS_DIR)).map(async (name) => ({
          name,
          checksum: sha256(await readFile(path.join(MIGRATIONS_DIR, name), 'utf8')),
        })),
      ),
    );
  });

  it('two `npm run db:migrate` processes started together on one empty database both exit 0', async () => {
    const target = await emptyDatabase();
    const [a, b] = await Promise.all([
      runNode('node/migrate-cli.ts', target.url),
      runNode('node/migrate-cli.ts', target.url),
    ]);
    expect([a.code, b.code], a.output + b.output).toEqual([0, 0]);
    expect(a.output + b.output).toMatch(/database is up to date[\s\S]*database is up to date/);
    const db = target.pool();
    expect((await db.query(`SELECT name FROM schema_migrations ORDER BY name`)).rows.map((r) => r.name)).toEqual(
      await sqlFiles(MIGRATIONS_DIR),
    );
    // the same schema as a database migrated alone (the test template)
    const template = new URL(inject('pgAdminUrl'));
    template.pathname = `/${inject('pgTemplate')}`;
    const reference = createDb({ connectionString: template.toString(), max: 1, timeouts: DEFAULTS.database.timeouts });
    try {
      expect(await schemaOf(db)).toEqual(await schemaOf(reference));
    } finally {
      await reference.end();
    }
  });
});

describe('migrating again', () => {
  it('applies nothing the second time and leaves the records as they were', async () => {
    const db = (await emptyDatabase()).pool();
    expect(await migrate(db)).toEqual(await sqlFiles(MIGRATIONS_DIR));
    const before = (await db.query(`SELECT name, checksum, applied_at FROM schema_migrations ORDER BY name`)).rows;
    const schema = await schemaOf(db);
    expect(await migrate(db)).toEqual([]);
    expect((await db.query(`SELECT name, checksum, applied_at FROM schema_migrations ORDER BY name`)).rows).toEqual(
      before,
    );
    expect(await schemaOf(db)).toEqual(schema);
  });
});

describe('append-only migrations', () => {
  /** A copy of db/migrations in a temp folder, to edit without touching the repository. */
  async function migrationsCopy(): Promise<string> {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'lastunit-migrations-'));
    await cp(MIGRATIONS_DIR, dir, { recursive: true });
    cleanups.push(() => rm(dir, { recursive: true, force: true }));
    return dir;
  }

  it('an applied migration edited afterwards makes migrate refuse, naming the file, and change nothing', async () => {
    const db = (await emptyDatabase()).pool();
    const dir = await migrationsCopy();
    await migrate(db, { migrations: dir });
    await appendFile(path.join(dir, '0001_schema.sql'), `\nCREATE INDEX products_name_idx ON products (name);\n`);
    await writeFile(path.join(dir, '9001_later.sql'), `CREATE TABLE later_table (id integer PRIMARY KEY);\n`);
    await db.query(`DROP FUNCTION order_json(uuid)`); // would be restored by any migrate that got as far as the functions

    const refused = migrate(db, { migrations: dir });
    await expect(refused).rejects.toThrow(
      `${path.join(dir, '0001_schema.sql')} was edited after it was applied (checksum ${sha256(await readFile(path.join(MIGRATIONS_DIR, '0001_schema.sql'), 'utf8'))} recorded`,
    );
    await expect(refused).rejects.toThrow(/migrations are append-only: restore the file and add a new file instead/);
    await expect(refused).rejects.toMatchObject({ name: 'MigrationRefused' });
    // refused before anything ran: the later file was not applied, the index not built, the function not restored
    expect((await db.query(`SELECT name FROM schema_migrations ORDER BY name`)).rows.map((r) => r.name)).toEqual(
      await sqlFiles(MIGRATIONS_DIR),
    );
    expect(
      (await db.query(`SELECT to_regclass('later_table') AS t, to_regclass('products_name_idx') AS i`)).rows[0],
    ).toEqual({ t: null, i: null });
    expect(await functionNames(db)).not.toContain('order_json');
  });

  it('a migration recorded in the database whose file is gone makes migrate refuse, naming the file', async () => {
    const db = (await emptyDatabase()).pool();
    const dir = await migrationsCopy();
    await writeFile(path.join(dir, '9002_extra.sql'), `CREATE TABLE extra_table (id integer PRIMARY KEY);\n`);
    expect(await migrate(db, { migrations: dir })).toEqual([...(await sqlFiles(MIGRATIONS_DIR)), '9002_extra.sql']);
    await rm(path.join(dir, '9002_extra.sql'));
    await expect(migrate(db, { migrations: dir })).rejects.toThrow(
      `${path.join(dir, '9002_extra.sql')} is recorded as applied in schema_migrations, but the file is missing`,
    );
  });

  it('a database of the pre-squash migrator (names without checksums) is refused, naming its first unknown file', async () => {
    const db = (await emptyDatabase()).pool();
    await db.query(
      `CREATE TABLE schema_migrations (name text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())`,
    );
    await db.query(`INSERT INTO schema_migrations (name) VALUES ('001_core.sql'), ('002_payments.sql')`);
    await expect(migrate(db)).rejects.toThrow(
      'db/migrations/001_core.sql is recorded as applied in schema_migrations, but the file is missing',
    );
  });

  it('a migration that fails names its file and leaves the database as it was (one transaction)', async () => {
    const db = (await emptyDatabase()).pool();
    const dir = await migrationsCopy();
    await writeFile(
      path.join(dir, '0002_broken.sql'),
      `CREATE TABLE broken (id integer PRIMARY KEY);\nALTER TABLE no_such_table ADD COLUMN x integer;\n`,
    );
    await expect(migrate(db, { migrations: dir })).rejects.toThrow(
      `${path.join(dir, '0002_broken.sql')}: relation "no_such_table" does not exist`,
    );
    expect(
      (await db.query(`SELECT to_regclass('schema_migrations') AS m, to_regclass('products') AS p`)).rows[0],
    ).toEqual({ m: null, p: null });
  });

  it('the real hosts refuse to start on a database whose applied migration was edited: exit non-zero, naming the file', async () => {
    const target = await emptyDatabase();
    const db = target.pool();
    await migrate(db);
    // the file as it is now no longer matches what the database recorded: the same as editing it after it was applied
    await db.query(`UPDATE schema_migrations SET checksum = $1 WHERE name = '0001_schema.sql'`, [
      sha256('the file as it was applied'),
    ]);
    const [cli, host] = await Promise.all([
      runNode('node/migrate-cli.ts', target.url),
      runNode('node/start.ts', target.url),
    ]);
    for (const run of [cli, host]) {
      expect(run.code, run.output).not.toBe(0);
      expect(run.output).toContain('MigrationRefused: db/migrations/0001_schema.sql was edited after it was applied');
      expect(run.output).not.toMatch(/listening on|database is up to date/);
    }
  });
});

describe('functions', () => {
  it('are re-applied on every migrate: a function altered or dropped in the database is restored', async () => {
    const db = (await emptyDatabase()).pool();
    await migrate(db);
    const schema = await schemaOf(db);
    await db.query(
      `CREATE OR REPLACE FUNCTION order_json(p_order_id uuid) RETURNS jsonb LANGUAGE sql STABLE AS $$ SELECT '{}'::jsonb $$`,
    );
    await db.query(`DROP FUNCTION expire_due_holds(integer)`);
    expect(await schemaOf(db)).not.toEqual(schema);
    expect(await migrate(db)).toEqual([]);
    expect(await schemaOf(db)).toEqual(schema);
  });
});

describe('the folders stay honest', () => {
  it('db/migrations holds numbered table changes only, db/functions holds CREATE OR REPLACE FUNCTION only', async () => {
    const migrations = await sqlFiles(MIGRATIONS_DIR);
    const functions = await sqlFiles(FUNCTIONS_DIR);
    expect(migrations.length).toBeGreaterThan(0);
    expect(functions.length).toBeGreaterThan(0);
    for (const name of migrations) {
      expect(name).toMatch(/^\d{4}_[a-z0-9_-]+\.sql$/);
      const sql = withoutComments(await readFile(path.join(MIGRATIONS_DIR, name), 'utf8'));
      expect(sql, `db/migrations/${name}`).not.toMatch(/\bCREATE\s+(OR\s+REPLACE\s+)?(FUNCTION|PROCEDURE)\b/i);
    }
    const declared: string[] = [];
    for (const name of functions) {
      const sql = withoutComments(await readFile(path.join(FUNCTIONS_DIR, name), 'utf8'));
      expect(sql, `db/functions/${name}`).not.toMatch(
        /\b(CREATE|ALTER|DROP)\s+TABLE\b|\bCREATE\s+(UNIQUE\s+)?INDEX\b|\bCREATE\s+TYPE\b/i,
      );
      // a plain CREATE FUNCTION would fail on the second migrate
      expect(sql, `db/functions/${name}`).not.toMatch(/\bCREATE\s+FUNCTION\b/i);
      declared.push(...[...sql.matchAll(/\bCREATE\s+OR\s+REPLACE\s+FUNCTION\s+(\w+)/gi)].map((m) => m[1]!));
    }
    // and every function the database ends up with comes from db/functions (none hides in a migration, e.g. in a DO block)
    const db = (await emptyDatabase()).pool();
    await migrate(db);
    expect(await functionNames(db)).toEqual([...new Set(declared)].sort());
  });
});
