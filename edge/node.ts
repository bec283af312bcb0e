// `npm start`: the Node host. Reads the configuration once, starts everything, stops cleanly on SIGINT/SIGTERM.
import { loadConfig, ConfigError } from './config.js';
import { startNodeHost } from './node-host.js';

async function main() {
  const config = loadConfig(process.env);
  const host = await startNodeHost(config);
  const lines = [
    `lastunit listening on ${host.url}/graphql  (health: ${host.url}/healthz, metrics: ${host.url}/metrics)`,
    host.embeddedDir ? `database: embedded PostgreSQL in ${host.embeddedDir}, demo catalog loaded` : 'database: DATABASE_URL',
  ];
  if (!config.apiKeys) {
    lines.push(`demo API keys (kept in ${config.dataDir}/demo-keys.json):`);
    for (const k of host.keys) lines.push(`  ${k.role.padEnd(10)} ${k.key}`);
  }
  console.log(lines.join('\n'));
  let signals = 0;
  const shutdown = (sig: string) => {
    if (signals++) process.exit(1);
    console.log(`${sig}: shutting down`);
    host.stop().then(
      () => process.exit(0),
      (err) => {
        console.error(err);
        process.exit(1);
      },
    );
  };
  process.on('SIGINT', () => shutdown('SIGINT'));
  process.on('SIGTERM', () => shutdown('SIGTERM'));
}

main().catch((err) => {
  if (err instanceof ConfigError) {
    console.error(err.message);
    process.exit(2);
  }
  console.error(err);
  process.exit(1);
});
