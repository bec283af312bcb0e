// `npm start`: the Node host. Reads the configuration once, starts everything, stops cleanly on SIGINT/SIGTERM.
import { loadConfig, ConfigError } from './config.js';
import { startNodeHost, type NodeHost } from './node-host.js';
import { onShutdownSignal } from './shutdown.js';

async function main() {
  const config = loadConfig(process.env);
  // Registered before anything starts: a signal during start-up waits for it to finish, then stops cleanly.
  let starting: Promise<NodeHost> | undefined;
  onShutdownSignal(async () => (await starting)?.stop(), (line) => console.log(line));
  starting = startNodeHost(config);
  const host = await starting;
  const lines = [
    `lastunit listening on ${host.url}/graphql  (health: ${host.url}/healthz, metrics: ${host.url}/metrics)`,
    host.embeddedDir ? `database: embedded PostgreSQL in ${host.embeddedDir}, demo catalog loaded` : 'database: DATABASE_URL',
  ];
  if (!config.apiKeys) {
    lines.push(`demo API keys (kept in ${config.dataDir}/demo-keys.json):`);
    for (const k of host.keys) lines.push(`  ${k.role.padEnd(10)} ${k.key}`);
  }
  console.log(lines.join('\n'));
}

main().catch((err) => {
  if (err instanceof ConfigError) {
    console.error(err.message);
    process.exit(2);
  }
  console.error(err);
  process.exit(1);
});
