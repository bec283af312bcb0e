import type { PaymentsConfig } from './config.js';
import type { Processor } from '../payments/processor.js';
import type { PaymentSettings } from '../orders/payment-step.js';
import { sandboxProcessor } from '../payments/sandbox-client.js';
import { startSandbox, type Sandbox } from '../payments/sandbox-server.js';
import { stripeProcessor } from '../payments/stripe.js';

export type PaymentsWiring = {
  processor: Processor;
  settings: PaymentSettings;
  /** the in-process sandbox, when SANDBOX_PAYMENTS_URL is absent; its webhooks go to `webhookUrl` once known */
  sandbox?: Sandbox;
  setWebhookUrl(url: string): void;
  stop(): Promise<void>;
};

/**
 * The processor PAYMENT_PROVIDER selects: Stripe, a separately run sandbox (SANDBOX_PAYMENTS_URL), or a sandbox started
 * in this process on a free port.
 * @example const payments = await wirePayments(config.payments)
 */
export async function wirePayments(c: PaymentsConfig): Promise<PaymentsWiring> {
  const settings: PaymentSettings = {
    deadlineSeconds: c.deadlineSeconds,
    maxPendingSeconds: c.maxPendingSeconds,
    actionTimeoutSeconds: c.actionTimeoutSeconds,
    capture: c.capture,
    // a request that held the key this long without finishing is dead (it would have timed out at the processor)
    recoverySeconds: Math.max(1, Math.ceil((c.timeoutMs * 2) / 1000)),
    pauseBeforeAuthorizeMs: c.faultPauseBeforeAuthorizeMs,
  };
  if (c.provider === 'stripe') {
    const processor = stripeProcessor({ secretKey: c.stripeSecretKey!, webhookSecret: c.stripeWebhookSecret!, timeoutMs: c.timeoutMs, webhookToleranceSeconds: c.webhookToleranceSeconds });
    return { processor, settings, setWebhookUrl: () => {}, stop: async () => {} };
  }
  const sandbox = c.sandboxUrl ? undefined : await startSandbox({ webhookSecret: c.webhookSecret });
  const processor = sandboxProcessor({
    url: c.sandboxUrl ?? sandbox!.url,
    timeoutMs: c.timeoutMs,
    webhookSecret: c.webhookSecret,
    webhookToleranceSeconds: c.webhookToleranceSeconds,
  });
  return {
    processor,
    settings,
    sandbox,
    setWebhookUrl: (url) => sandbox?.configure({ webhookUrl: url }),
    stop: async () => {
      await sandbox?.close();
    },
  };
}
