import type { Logger } from 'pino';
import type { Db } from '../db/pool.js';
import * as store from '../db/channels-store.js';
import { createChannels } from '../orders/channels.js';
import { startMarketplaceSandbox, type MarketplaceSandbox } from '../channels/sandbox-marketplace.js';
import { DEMO_CHANNEL } from './demo-catalog.js';

export type MarketplaceWiring = {
  /** the in-process sandbox, when it was started */
  sandbox?: MarketplaceSandbox;
  /** where the sandbox delivers its buyers' orders: this host's webhook route for the demo channel */
  setWebhookUrl(baseUrl: string): void;
  stop(): Promise<void>;
};

const none: MarketplaceWiring = { setWebhookUrl: () => {}, stop: async () => {} };

/**
 * MARKETPLACE_SANDBOX=in-process (the development default; refused in production): the marketplace sandbox on a free
 * port in this process, like the payment sandbox, and the demo SANDBOX channel (DEMO_CHANNEL) pointing at it: created
 * on the first start, its endpoint moved to this start's sandbox afterwards, and every listing marked to be sent again
 * to the fresh, empty sandbox. Not started when another channel exists: the
 * database's channels point at real marketplaces (or a separately run sandbox) then.
 * Runs before the pusher starts, so the pusher never sends to the previous start's port.
 * @example const marketplace = config.channels.marketplaceSandbox ? await wireMarketplaceSandbox(db, logger) : undefined
 */
export async function wireMarketplaceSandbox(
  db: Db,
  logger: Pick<Logger, 'info' | 'warn'>,
): Promise<MarketplaceWiring> {
  const others = (await store.listChannels(db)).filter((c) => c.id !== DEMO_CHANNEL.id);
  if (others.length) {
    logger.info({ channels: others.map((c) => c.id) }, 'marketplace sandbox not started: channels point elsewhere');
    return none;
  }
  const sandbox = await startMarketplaceSandbox({ maxRequestsPerSecond: DEMO_CHANNEL.maxPushesPerSecond });
  try {
    const created = await createChannels({ db }).createChannel({ ...DEMO_CHANNEL, endpoint: sandbox.url });
    if (!created.ok) {
      // it exists: this start's port, and every listing again (this sandbox starts empty)
      await store.updateChannel(db, DEMO_CHANNEL.id, { endpoint: sandbox.url });
      await store.repushListings(db, DEMO_CHANNEL.id);
    }
    const secret = await store.findChannelSecret(db, DEMO_CHANNEL.id);
    if (!secret) throw new Error(`the demo channel ${DEMO_CHANNEL.id} is missing`);
    sandbox.configure({ webhookSecret: secret.webhookSecret });
  } catch (err) {
    await sandbox.close();
    throw err;
  }
  logger.info({ url: sandbox.url, channel: DEMO_CHANNEL.id }, 'marketplace sandbox started in-process');
  return {
    sandbox,
    setWebhookUrl: (baseUrl) => sandbox.configure({ webhookUrl: `${baseUrl}/webhooks/channels/${DEMO_CHANNEL.id}` }),
    stop: () => sandbox.close(),
  };
}
