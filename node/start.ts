// `npm start`: the Node host. Reads the configuration once, starts everything, stops cleanly on SIGINT/SIGTERM.
import { loadConfig } from './config.js';
import { startNodeHost } from './host.js';
import { runEntry } from './entry.js';

void runEntry({
  config: loadConfig,
  async start(config) {
    const host = await startNodeHost(config);
    const lines = [
      `lastunit listening on ${host.url}/graphql  (health: ${host.url}/healthz, metrics: ${host.url}/metrics)`,
      host.embeddedDir ? `database: embedded PostgreSQL in ${host.embeddedDir}, demo catalog loaded` : 'database: DATABASE_URL',
    ];
    if (!config.apiKeys) {
      lines.push(`demo API keys (kept in ${config.dataDir}/demo-keys.json):`);
      for (const k of host.keys) lines.push(`  ${k.role.padEnd(10)} ${k.key}`);
    }
    return { lines, stop: host.stop };
  },
});
