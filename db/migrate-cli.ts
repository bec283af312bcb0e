// `npm run db:migrate`: applies pending migrations to DATABASE_URL (or the embedded database under DATA_DIR).
import path from 'node:path';
import { createDb } from './pool.js';
import { migrate } from './migrate.js';
import { startEmbeddedPostgres } from './embedded.js';

const url = process.env.DATABASE_URL;
const embedded = url ? undefined : await startEmbeddedPostgres({ dir: path.join(process.env.DATA_DIR ?? '.data', 'pg'), database: 'lastunit' });
const db = createDb({ connectionString: url ?? embedded!.url, max: 1 });
try {
  const applied = await migrate(db);
  console.log(applied.length ? `applied: ${applied.join(', ')}` : 'up to date');
} finally {
  await db.end();
  await embedded?.stop();
}
