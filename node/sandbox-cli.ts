// `npm run sandbox:payments`: the sandbox processor on its own. SANDBOX_PORT (4100), SANDBOX_WEBHOOK_URL,
// PAYMENT_WEBHOOK_SECRET (the dev secret by default), SANDBOX_HANG_MS (10000). See docs/payments.md.
import { loadSandboxConfig } from './config.js';
import { startSandbox } from '../payments/sandbox-server.js';
import { runEntry } from './entry.js';

void runEntry({
  config: loadSandboxConfig,
  async start(c) {
    const sandbox = await startSandbox({
      port: c.port,
      host: '0.0.0.0',
      webhookUrl: c.webhookUrl,
      webhookSecret: c.webhookSecret,
      hangMs: c.hangMs,
    });
    return {
      lines: [
        `sandbox payments listening on ${sandbox.url}; webhooks to ${c.webhookUrl ?? '(none: set SANDBOX_WEBHOOK_URL)'}`,
      ],
      stop: () => sandbox.close(),
    };
  },
});
