// The real Node host for the flash-sale bench: the kit's spawner with API keys of its own and production mode. The
// rate limits are the defaults: one storefront key carrying a whole sale must not meet them (node/traffic-config.ts).
import { randomBytes } from 'node:crypto';
import { spawnServer, type ServerProcess as KitServerProcess } from '../kit/server.js';

export type ServerProcess = KitServerProcess & { keys: { storefront: string; admin: string } };

const randomKey = () => randomBytes(18).toString('base64url'); // 24 characters, no ':' or ','

/**
 * What a bench's production host needs beyond its keys (the production profile, README): sandbox payments said out
 * loud with a secret of its own, and /metrics kept on this machine (HOST=127.0.0.1), so no METRICS_TOKEN.
 * @example spawnServer({ env: { DATABASE_URL, API_KEYS, ...benchProductionEnv() } })
 */
export const benchProductionEnv = () => ({
  NODE_ENV: 'production',
  PAYMENT_PROVIDER: 'sandbox',
  ALLOW_SANDBOX_PAYMENTS: 'true',
  PAYMENT_WEBHOOK_SECRET: randomKey(),
  BUYER_TOKEN_SECRET: randomKey() + randomKey(),
  HOST: '127.0.0.1',
});

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
      // one host process unless the caller asks for more (production's default is one per core)
      WEB_CONCURRENCY: '1',
      ...opts.extraEnv,
      DATABASE_URL: opts.databaseUrl,
      API_KEYS: `storefront:${keys.storefront},admin:${keys.admin}`,
      LOG_LEVEL: 'warn',
      ...benchProductionEnv(),
    },
    startTimeoutMs: opts.startTimeoutMs,
    nodeArgs: opts.nodeArgs,
    onUnexpectedExit:
      opts.onUnexpectedExit && ((why) => opts.onUnexpectedExit!(`the server exited during the bench: ${why}`)),
  });
  return { ...srv, keys };
}

/**
 * A server's extra environment from one variable of the form "NAME=value NAME2=value2" (AB_A, CHEAP_ENV,
 * COSTS_SERVER_ENV, WAL_SERVER_ENV); empty or absent: none.
 * @example startServer({ databaseUrl, extraEnv: envList(process.env.CHEAP_ENV) })
 */
export function envList(s: string | undefined): Record<string, string> {
  return Object.fromEntries(
    (s ?? '')
      .split(/\s+/)
      .filter(Boolean)
      .map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]),
  );
}
