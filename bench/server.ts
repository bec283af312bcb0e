// The real Node host for the flash-sale bench: the kit's spawner with API keys of its own and production mode. The
// rate limits are the defaults: one storefront key carrying a whole sale must not meet them (node/traffic-config.ts).
import { randomBytes } from 'node:crypto';
import { spawnServer, type ServerProcess as KitServerProcess } from '../kit/server.js';

export type ServerProcess = KitServerProcess & { keys: { storefront: string; admin: string } };

const randomKey = () => randomBytes(18).toString('base64url'); // 24 characters, no ':' or ','

/**
 * Starts the server against `databaseUrl` and resolves when it prints its listening line.
 * @example const srv = await startServer({ databaseUrl }); ...; await srv.stop()
 */
export async function startServer(opts: {
  databaseUrl: string;
  startTimeoutMs?: number;
  extraEnv?: Record<string, string>;
  /** node flags for the server, e.g. ['--cpu-prof'] */
  nodeArgs?: string[];
  /** told when the server exits after it was listening and before stop() was called */
  onUnexpectedExit?: (why: string) => void;
}): Promise<ServerProcess> {
  const keys = { storefront: randomKey(), admin: randomKey() };
  const srv = await spawnServer({
    env: {
      ...opts.extraEnv,
      DATABASE_URL: opts.databaseUrl,
      API_KEYS: `storefront:${keys.storefront},admin:${keys.admin}`,
      LOG_LEVEL: 'warn',
      NODE_ENV: 'production',
      // the production profile: the bench's payments are the sandbox's, said so explicitly, with a secret of its own;
      // /metrics stays on this machine (HOST=127.0.0.1), so no METRICS_TOKEN is needed
      PAYMENT_PROVIDER: 'sandbox',
      ALLOW_SANDBOX_PAYMENTS: 'true',
      PAYMENT_WEBHOOK_SECRET: randomKey(),
      HOST: '127.0.0.1',
    },
    startTimeoutMs: opts.startTimeoutMs,
    nodeArgs: opts.nodeArgs,
    onUnexpectedExit: opts.onUnexpectedExit && ((why) => opts.onUnexpectedExit!(`the server exited during the bench: ${why}`)),
  });
  return { ...srv, keys };
}
