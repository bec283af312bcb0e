// `npm run sandbox:marketplace`: the marketplace sandbox on its own (channels/sandbox-marketplace.ts, docs/channels.md).
// Create a SANDBOX channel whose endpoint is this URL, then give it the channel's webhook URL and secret:
//   MARKETPLACE_PORT (4200), MARKETPLACE_WEBHOOK_URL (http://127.0.0.1:4000/webhooks/channels/<id>),
//   MARKETPLACE_WEBHOOK_SECRET (createChannel's webhookSecret), MARKETPLACE_LAG_MS (0), MARKETPLACE_MAX_RPS (5),
//   MARKETPLACE_DUPLICATE_RATE (0), MARKETPLACE_MAX_DELAY_MS (0), MARKETPLACE_BUYER_SKUS (comma list: buyers buy
//   these while listed), MARKETPLACE_BUYERS_PER_SECOND (1).
import { z } from 'zod';
import { int, parseOrThrow } from '../common/config-fields.js';
import { startMarketplaceSandbox } from '../channels/sandbox-marketplace.js';
import { runEntry } from './entry.js';

const schema = z.object({
  MARKETPLACE_PORT: int(0, 4200),
  MARKETPLACE_WEBHOOK_URL: z.string().regex(/^https?:\/\//, 'must be an http(s):// URL').optional(),
  MARKETPLACE_WEBHOOK_SECRET: z.string().min(16, 'must have 16+ characters').optional(),
  MARKETPLACE_LAG_MS: int(0, 0),
  MARKETPLACE_MAX_RPS: int(0, 5),
  MARKETPLACE_DUPLICATE_RATE: z.coerce.number().min(0).max(1).default(0),
  MARKETPLACE_MAX_DELAY_MS: int(0, 0),
  MARKETPLACE_BUYER_SKUS: z.string().optional(),
  MARKETPLACE_BUYERS_PER_SECOND: int(1, 1),
});

void runEntry({
  config: (env) => parseOrThrow(schema, env),
  async start(c) {
    const m = await startMarketplaceSandbox({
      port: c.MARKETPLACE_PORT,
      host: '127.0.0.1',
      webhookUrl: c.MARKETPLACE_WEBHOOK_URL,
      webhookSecret: c.MARKETPLACE_WEBHOOK_SECRET,
      lagMs: c.MARKETPLACE_LAG_MS,
      maxRequestsPerSecond: c.MARKETPLACE_MAX_RPS,
      duplicateRate: c.MARKETPLACE_DUPLICATE_RATE,
      maxDelayMs: c.MARKETPLACE_MAX_DELAY_MS,
    });
    const skus = (c.MARKETPLACE_BUYER_SKUS ?? '').split(',').map((s) => s.trim()).filter(Boolean);
    const stopBuyers = skus.length ? m.startBuyers(skus, c.MARKETPLACE_BUYERS_PER_SECOND) : () => {};
    return {
      lines: [
        `sandbox marketplace listening on ${m.url} (use it as a SANDBOX channel's endpoint); orders to ${c.MARKETPLACE_WEBHOOK_URL ?? '(none: set MARKETPLACE_WEBHOOK_URL and MARKETPLACE_WEBHOOK_SECRET)'}`,
        skus.length ? `buyers: ${c.MARKETPLACE_BUYERS_PER_SECOND}/s over ${skus.join(', ')}` : 'buyers: none (set MARKETPLACE_BUYER_SKUS)',
      ],
      stop: async () => {
        stopBuyers();
        await m.close();
      },
    };
  },
});
