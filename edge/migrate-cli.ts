// `npm run db:migrate`: applies pending migrations to DATABASE_URL (or the embedded database under DATA_DIR).
import pino from 'pino';
import { loadConfig } from './config.js';
import { openDatabase } from './database.js';

const logger = pino({ level: 'info' });
const { close } = await openDatabase(loadConfig(process.env), logger, undefined, 1);
logger.info('database is up to date');
await close();
