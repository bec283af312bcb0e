// `npm run db:migrate`: applies pending migrations to DATABASE_URL (or the embedded database under DATA_DIR).
import pino from 'pino';
import { loadConfig } from './config.js';
import { openDatabase } from './database.js';
import { runEntry } from './entry.js';

void runEntry({
  config: loadConfig,
  oneShot: true,
  async start(config) {
    const { close } = await openDatabase(config.database, pino({ level: 'info' }), undefined, 1);
    return { lines: ['database is up to date'], stop: close };
  },
});
