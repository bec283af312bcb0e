// `npm run sandbox:payments`: the sandbox processor on its own. SANDBOX_PORT (4100), SANDBOX_WEBHOOK_URL,
// PAYMENT_WEBHOOK_SECRET (the dev secret by default), SANDBOX_HANG_MS (10000). See docs/payments.md.
import { ConfigError, loadSandboxConfig } from '../edge/config.js';
import { startSandbox } from './sandbox-server.js';

try {
  const c = loadSandboxConfig(process.env);
  const sandbox = await startSandbox({ port: c.port, host: '0.0.0.0', webhookUrl: c.webhookUrl, webhookSecret: c.webhookSecret, hangMs: c.hangMs });
  console.log(`sandbox payments listening on ${sandbox.url}; webhooks to ${c.webhookUrl ?? '(none: set SANDBOX_WEBHOOK_URL)'}`);
  const stop = () => sandbox.close().then(() => process.exit(0));
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
} catch (err) {
  console.error(err instanceof ConfigError ? err.message : err);
  process.exit(err instanceof ConfigError ? 2 : 1);
}
