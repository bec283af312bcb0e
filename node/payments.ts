// The payment processor a Node entry uses (Stripe, a separately run sandbox, or one in-process), wired from the
// payments section.
import type { Config } from './config.js';
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

/** What the domain's payment step is given, from the payments section. */
export const paymentSettingsOf = (c: Config['payments']): PaymentSettings => ({
  deadlineSeconds: c.deadlineSeconds,
  maxPendingSeconds: c.maxPendingSeconds,
  actionTimeoutSeconds: c.actionTimeoutSeconds,
  // a request that held the key this long without finishing is dead (it would have timed out at the processor)
  recoverySeconds: Math.max(1, Math.ceil((c.timeoutMs * 2) / 1000)),
  pauseBeforeAuthorizeMs: c.faultPauseBeforeAuthorizeMs,
});

/**
 * The processor PAYMENT_PROVIDER selects: Stripe, a separately run sandbox (SANDBOX_PAYMENTS_URL), or a sandbox started
 * in this process on a free port.
 * @example const payments = await wirePayments(config.payments, config.webhooks)
 */
export async function wirePayments(c: Config['payments'], webhooks: Config['webhooks']): Promise<PaymentsWiring> {
  const settings = paymentSettingsOf(c);
  if (c.provider === 'stripe') {
    const processor = stripeProcessor({
      secretKey: c.stripeSecretKey!,
      webhookSecret: c.stripeWebhookSecret!,
      timeoutMs: c.timeoutMs,
      webhookToleranceSeconds: webhooks.toleranceSeconds,
    });
    return { processor, settings, setWebhookUrl: () => {}, stop: async () => {} };
  }
  const sandbox = c.sandboxUrl ? undefined : await startSandbox({ webhookSecret: c.webhookSecret });
  const processor = sandboxProcessor({
    url: c.sandboxUrl ?? sandbox!.url,
    timeoutMs: c.timeoutMs,
    webhookSecret: c.webhookSecret,
    webhookToleranceSeconds: webhooks.toleranceSeconds,
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
