// `npm run sandbox:marketplace`: the marketplace sandbox on its own (channels/sandbox-marketplace.ts, docs/channels.md).
// Create a SANDBOX channel whose endpoint is this URL, then give it the channel's webhook URL and secret:
//   MARKETPLACE_PORT (4200), MARKETPLACE_WEBHOOK_URL (http://127.0.0.1:4000/webhooks/channels/<id>),
//   MARKETPLACE_WEBHOOK_SECRET (createChannel's webhookSecret), MARKETPLACE_LAG_MS (0), MARKETPLACE_MAX_RPS (5),
//   MARKETPLACE_DUPLICATE_RATE (0), MARKETPLACE_MAX_DELAY_MS (0), MARKETPLACE_BUYER_SKUS (comma list: buyers buy
//   these while listed), MARKETPLACE_BUYERS_PER_SECOND (1).
import { z } from 'zod';
import { int, setting, text } from '../common/config-fields.js';
import { readSection } from '../common/config-reader.js';
import { startMarketplaceSandbox } from '../channels/sandbox-marketplace.js';
import { runEntry } from './entry.js';

const marketplaceSandboxSettings = z.object({
  port: setting('MARKETPLACE_PORT', int(0, 4200)),
  webhookUrl: setting(
    'MARKETPLACE_WEBHOOK_URL',
    z
      .string()
      .regex(/^https?:\/\//, 'must be an http(s):// URL')
      .optional(),
  ),
  webhookSecret: setting('MARKETPLACE_WEBHOOK_SECRET', z.string().min(16, 'must have 16+ characters').optional()),
  lagMs: setting('MARKETPLACE_LAG_MS', int(0, 0)),
  maxRequestsPerSecond: setting('MARKETPLACE_MAX_RPS', int(0, 5)),
  duplicateRate: setting('MARKETPLACE_DUPLICATE_RATE', z.coerce.number().min(0).max(1).default(0)),
  maxDelayMs: setting('MARKETPLACE_MAX_DELAY_MS', int(0, 0)),
  /** comma list: buyers buy these while listed */
  buyerSkus: setting('MARKETPLACE_BUYER_SKUS', text),
  buyersPerSecond: setting('MARKETPLACE_BUYERS_PER_SECOND', int(1, 1)),
});

void runEntry({
  config: (env) => readSection(env, marketplaceSandboxSettings),
  async start(c) {
    const m = await startMarketplaceSandbox({
      port: c.port,
      host: '127.0.0.1',
      webhookUrl: c.webhookUrl,
      webhookSecret: c.webhookSecret,
      lagMs: c.lagMs,
      maxRequestsPerSecond: c.maxRequestsPerSecond,
      duplicateRate: c.duplicateRate,
      maxDelayMs: c.maxDelayMs,
    });
    const skus = (c.buyerSkus ?? '')
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean);
    const stopBuyers = skus.length ? m.startBuyers(skus, c.buyersPerSecond) : () => {};
    return {
      lines: [
        `sandbox marketplace listening on ${m.url} (use it as a SANDBOX channel's endpoint); orders to ${c.webhookUrl ?? '(none: set MARKETPLACE_WEBHOOK_URL and MARKETPLACE_WEBHOOK_SECRET)'}`,
        skus.length
          ? `buyers: ${c.buyersPerSecond}/s over ${skus.join(', ')}`
          : 'buyers: none (set MARKETPLACE_BUYER_SKUS)',
      ],
      stop: async () => {
        stopBuyers();
        await m.close();
      },
    };
  },
});
