// `npm start`: the Node host. Reads the configuration once, starts everything, stops cleanly on SIGINT/SIGTERM; with
// WEB_CONCURRENCY > 1 it forks that many host processes on one port (node/cluster.ts).
import { apiHostNeeds, isLoopbackHost, loadConfig } from './config.js';
import { runEntry } from './entry.js';
import { isClusterWorker, reportReady, startCluster } from './cluster.js';

/** A key shown in a production start: its last 4 characters only (the whole key is in DATA_DIR/demo-keys.json). */
const masked = (key: string) => `...${key.slice(-4)}`;

void runEntry({
  config: (env) => loadConfig(env, apiHostNeeds),
  async start(config) {
    // WEB_CONCURRENCY > 1: this process only forks and stops the host processes (node/cluster.ts)
    if (config.http.processes > 1 && !isClusterWorker()) return startCluster(config);
    // the host (the whole app) is loaded only once the configuration was accepted: a refused start exits at once
    const { startNodeHost } = await import('./host.js');
    const host = await startNodeHost(config);
    const address = host.bound.replace(/:\d+$/, '');
    const scope = isLoopbackHost(address)
      ? 'this machine only'
      : /^(0\.0\.0\.0|\[::\])$/.test(address)
        ? 'every address'
        : 'this address';
    const lines = [
      `lastunit listening on ${host.bound} (${scope}): ${host.url}/graphql` +
        `  (health: ${host.url}/healthz, metrics: ${host.url}/metrics)`,
      host.embeddedDir
        ? `database: embedded PostgreSQL in ${host.embeddedDir}, demo catalog loaded`
        : 'database: DATABASE_URL',
    ];
    if (!config.auth.apiKeys) {
      const production = config.runtime.nodeEnv === 'production';
      const file = `${config.database.dataDir}/demo-keys.json`;
      // a production demo box (EMBEDDED_DATABASE=allow) never prints a whole key: logs travel further than the box
      lines.push(
        production
          ? `demo API keys (EMBEDDED_DATABASE=allow; the whole keys are in ${file} only):`
          : `demo API keys (kept in ${file}):`,
      );
      for (const k of host.keys)
        lines.push(
          `  ${k.role.padEnd(10)} ${production ? masked(k.key) : k.key}${k.client ? `  (${k.role === 'partner' ? 'app' : 'client'} ${k.client})` : ''}`,
        );
    }
    if (isClusterWorker()) {
      // a terminal's Ctrl-C reaches the whole process group: the primary turns it into one SIGTERM per process
      process.removeAllListeners('SIGINT');
      process.on('SIGINT', () => {});
      reportReady({ port: host.port, url: host.url, lines }); // the primary prints them once
      return { stop: host.stop };
    }
    return { lines, stop: host.stop };
  },
});
