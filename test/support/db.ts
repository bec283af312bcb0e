import { inject } from 'vitest';
import pg from 'pg';
import { randomBytes } from 'node:crypto';
import { createDb, type Db } from '../../db/pool.js';
import type { RetryOptions } from '../../db/retry.js';
import { DEFAULTS } from '../../kit/config-defaults.js';

/**
 * A test file's database: `url` and `db` reach it through PgBouncer under LASTUNIT_TEST_PGBOUNCER=on
 * (test/support/global-setup.ts), `directUrl` always without a pooler (LISTEN, session state).
 */
export type TestDatabase = { url: string; directUrl: string; name: string; db: Db; drop: () => Promise<void> };

/** A fresh database of this test file's own, cloned from the migrated template. */
export async function createTestDatabase(opts: { max?: number; retry?: RetryOptions } = {}): Promise<TestDatabase> {
  const adminUrl = inject('pgAdminUrl');
  const template = inject('pgTemplate');
  const name = `lu_t_${template.split('_')[2]}_${randomBytes(5).toString('hex')}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  for (let attempt = 0; ; attempt++) {
    try {
      await admin.query(`CREATE DATABASE ${name} TEMPLATE ${template}`);
      break;
    } catch (err) {
      // another file cloning the same template at this instant: wait and try again
      if (attempt > 20 || !/being accessed by other users/.test(String(err))) throw err;
      await new Promise((r) => setTimeout(r, 50 + Math.random() * 200));
    }
  }
  await admin.end();
  const direct = new URL(adminUrl);
  direct.pathname = `/${name}`;
  const url = new URL(direct);
  const poolerPort = inject('pgPoolerPort');
  if (poolerPort) url.host = `127.0.0.1:${poolerPort}`;
  const db = createDb({
    connectionString: url.toString(),
    max: opts.max ?? DEFAULTS.database.poolSize,
    timeouts: DEFAULTS.database.timeouts,
    retry: opts.retry,
  });
  return {
    url: url.toString(),
    directUrl: direct.toString(),
    name,
    db,
    drop: async () => {
      await db.end();
      const c = new pg.Client({ connectionString: adminUrl });
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await c.end();
    },
  };
}
