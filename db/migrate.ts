// Brings a database to this code's schema: pending table migrations (append-only, checksummed), then every SQL function.
import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import path from 'node:path';
import { z } from 'zod';
import type { Db } from './pool.js';
import { parseRow, parseRows } from './rows.js';

const DB_DIR = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.dirname(DB_DIR);
export const MIGRATIONS_DIR = path.join(DB_DIR, 'migrations');
export const FUNCTIONS_DIR = path.join(DB_DIR, 'functions');
const LOCK_ID = 727_001; // pg_advisory_xact_lock key: one migrator at a time across processes
// How long a migrator waits for another one to finish. The pool's lock_timeout / statement_timeout are sized for
// requests; a second host starting while the first migrates must wait for it, not fail.
const LOCK_WAIT = '300s';

/**
 * The database and the migration files disagree: nothing was changed, and nothing should start on this database.
 * Its message says everything (which file, why, what to do), so it carries no stack: a start-up failure prints one
 * clear line instead of a trace through this file.
 */
export class MigrationRefused extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'MigrationRefused';
    this.stack = `${this.name}: ${message}`;
  }
}

type SqlFile = { name: string; shown: string; sql: string; checksum: string };

/** A file as the user knows it: repository-relative when inside the repository (db/migrations/0001_schema.sql). */
function shown(file: string): string {
  const rel = path.relative(ROOT, file);
  return rel.startsWith('..') || path.isAbsolute(rel) ? file : rel.split(path.sep).join('/');
}

/** Every `.sql` file of `dir` in name order, with the sha256 of its text (line endings normalised, so a CRLF checkout matches). */
async function readSqlFolder(dir: string): Promise<SqlFile[]> {
  const names = (await readdir(dir)).filter((f) => f.endsWith('.sql')).sort();
  return Promise.all(
    names.map(async (name) => {
      const file = path.join(dir, name);
      const sql = (await readFile(file, 'utf8')).replace(/\r\n/g, '\n');
      return { name, shown: shown(file), sql, checksum: createHash('sha256').update(sql).digest('hex') };
    }),
  );
}

/** Runs one file's SQL; a failure names the file (the error object is kept, so its SQLSTATE still drives retries). */
async function runFile(tx: { query: Db['query'] }, f: SqlFile): Promise<void> {
  try {
    await tx.query(f.sql);
  } catch (err) {
    if (err instanceof Error) err.message = `${f.shown}: ${err.message}`;
    throw err;
  }
}

/**
 * Applies every pending `db/migrations/NNNN_name.sql` in name order, recording each with its sha256, then re-applies every
 * `db/functions/*.sql` in name order. All of it is ONE transaction under one advisory lock taken first, so concurrent
 * migrators queue (the second finds nothing to do) and a failure leaves the database as it was. Refuses (MigrationRefused,
 * nothing changed) when an applied migration's file was edited or is missing. `dirs` exists for tests.
 * Returns the names of the table migrations applied by this call (functions are re-applied on every call, so not listed).
 * @example const applied = await migrate(db)
 */
export async function migrate(db: Db, dirs: { migrations?: string; functions?: string } = {}): Promise<string[]> {
  const migrationsDir = dirs.migrations ?? MIGRATIONS_DIR;
  const migrations = await readSqlFolder(migrationsDir);
  const functions = await readSqlFolder(dirs.functions ?? FUNCTIONS_DIR);
  return db.transaction(async (tx) => {
    const { rows: settings } = await tx.query(
      `SELECT current_setting('lock_timeout') AS lock, current_setting('statement_timeout') AS statement`,
    );
    const timeouts = parseRow(
      z.object({ lock: z.string(), statement: z.string() }),
      settings[0],
      'the session timeouts',
    );
    await tx.query(`SELECT set_config('lock_timeout', $1, true), set_config('statement_timeout', $1, true)`, [
      LOCK_WAIT,
    ]);
    await tx.query('SELECT pg_advisory_xact_lock($1)', [LOCK_ID]);
    await tx.query(`SELECT set_config('lock_timeout', $1, true), set_config('statement_timeout', $2, true)`, [
      timeouts.lock,
      timeouts.statement,
    ]);

    // Under the lock, so two migrators of an empty database cannot both create it (the second used to fail with 23505).
    await tx.query(
      `CREATE TABLE IF NOT EXISTS schema_migrations (
         name        text PRIMARY KEY,
         checksum    text NOT NULL,
         applied_at  timestamptz NOT NULL DEFAULT now()
       )`,
    );
    // to_jsonb: a schema_migrations of the pre-checksum migrator (no such column) reads as null instead of failing here,
    // so its rows meet the clear refusals below.
    const recordedRows = await tx.query(
      `SELECT m.name, to_jsonb(m)->>'checksum' AS checksum FROM schema_migrations m ORDER BY m.name`,
    );
    const rows = parseRows(
      z.object({ name: z.string(), checksum: z.string().nullable() }),
      recordedRows.rows,
      'schema_migrations',
    );
    const files = new Map(migrations.map((m) => [m.name, m]));
    for (const r of rows) {
      const f = files.get(r.name);
      if (!f) {
        throw new MigrationRefused(
          `${shown(path.join(migrationsDir, r.name))} is recorded as applied in schema_migrations, but the file is missing; ` +
            `this database was migrated by other code (a newer version, or a pre-release schema): run the code that ` +
            `matches it, or migrate a new database`,
        );
      }
      if (r.checksum !== f.checksum) {
        throw new MigrationRefused(
          `${f.shown} was edited after it was applied (checksum ${r.checksum ?? 'none'} recorded, ${f.checksum} now); ` +
            `migrations are append-only: restore the file and add a new file instead`,
        );
      }
    }

    const recorded = new Set(rows.map((r) => r.name));
    const applied: string[] = [];
    for (const m of migrations) {
      if (recorded.has(m.name)) continue;
      await runFile(tx, m);
      await tx.query('INSERT INTO schema_migrations (name, checksum) VALUES ($1, $2)', [m.name, m.checksum]);
      applied.push(m.name);
    }
    // Always, not only when their checksum changed: a few milliseconds per start buy a database whose functions are
    // exactly these files even after a hand edit or a DROP (docs/database.md, "Functions").
    for (const f of functions) await runFile(tx, f);
    return applied;
  });
}

/**
 * Why this database should not get this code's traffic now (empty: it should): it is a standby (read-only, e.g. the
 * old primary after a failover, or an endpoint not yet moved), or a migration file of this code is not applied yet.
 * One statement; a database that cannot be reached rejects (the caller reports it).
 * @example const reasons = await primaryProblems(db) // [] or ['the database is a read-only standby']
 */
export async function primaryProblems(db: Db, dir = MIGRATIONS_DIR): Promise<string[]> {
  const files = (await readdir(dir)).filter((f) => f.endsWith('.sql')).sort();
  const { rows } = await db.query(
    `SELECT pg_is_in_recovery() AS standby, current_setting('transaction_read_only') = 'on' AS read_only,
            coalesce((SELECT array_agg(name) FROM schema_migrations), '{}') AS applied`,
  );
  const state = parseRow(
    z.object({ standby: z.boolean(), read_only: z.boolean(), applied: z.array(z.string()) }),
    rows[0],
    'primaryProblems()',
  );
  const problems: string[] = [];
  if (state.standby || state.read_only) problems.push('the database is a read-only standby');
  const applied = new Set(state.applied);
  const pending = files.filter((f) => !applied.has(f));
  if (pending.length) problems.push(`migrations not applied: ${pending.join(', ')}`);
  return problems;
}
