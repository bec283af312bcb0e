// The database a Node entry runs on: DATABASE_URL, or the embedded PostgreSQL where the configuration allows it;
// migrated.
import path from 'node:path';
import type { Logger } from 'pino';
import { createDb, type Db } from '../db/pool.js';
import { migrate } from '../db/migrate.js';
import { startEmbeddedPostgres, type EmbeddedDb } from '../db/embedded.js';
import type { Config } from './config.js';
import type { Metrics } from '../common/metrics.js';

/**
 * The database a host runs on: DATABASE_URL, or the embedded PostgreSQL under DATA_DIR/pg (where the configuration
 * allows it: node/config-sections.ts); migrated.
 * @example const { db, close } = await openDatabase(config.database, logger, metrics)
 */
export async function openDatabase(
  settings: Config['database'],
  logger: Logger,
  metrics?: Metrics,
  poolSize = settings.poolSize,
) {
  let embedded: EmbeddedDb | undefined;
  let url = settings.url;
  if (!url) {
    embedded = await startEmbeddedPostgres({
      dir: path.join(settings.dataDir, 'pg'),
      database: 'lastunit',
      onLog: (l) => logger.trace({ pg: l.trim() }),
      onWarn: (l) => logger.warn(l),
    });
    url = embedded.url;
  }
  const db: Db = createDb({
    connectionString: url,
    max: poolSize,
    timeouts: settings.timeouts,
    retry: metrics ? { onRetry: (reason) => metrics.txRetries.inc({ reason }) } : {},
  });
  const applied = await migrate(db);
  if (applied.length) logger.info({ applied }, 'migrations applied');
  return {
    db,
    url,
    embedded,
    close: async () => {
      await db.end();
      await embedded?.stop();
    },
  };
}
