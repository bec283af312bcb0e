import { Hono } from 'hono';
import type { Db } from '../db/pool.js';
import type { Metrics } from '../common/metrics.js';
import type { AfterCommit } from '../common/after-commit.js';
import { findChannelSecret, handleChannelWebhook } from '../orders/channels.js';
import { requestBodyLimit } from './request-guards.js';

type ChannelSecret = NonNullable<Awaited<ReturnType<typeof findChannelSecret>>>;

/**
 * `POST /:channelId` for marketplaces (docs/channels.md). No API key: the channel's signature is the authentication.
 * An unknown channel is 404 before a byte of the body is read; the body is then read under a size limit while it
 * streams (413 past it), as text, and verified as received. Thin: the logic is in orders/channels.ts.
 * @example app.route('/webhooks/channels', channelWebhooks({ db, metrics, maxBodyBytes: 262_144, toleranceSeconds: 300 }))
 */
export function channelWebhooks(deps: {
  db: Db;
  metrics: Metrics;
  onOutboxWritten?: AfterCommit;
  maxBodyBytes: number;
  toleranceSeconds: number;
  onIncident?: () => void;
}) {
  const app = new Hono<{ Variables: { channel: ChannelSecret } }>();
  app.post(
    '/:channelId',
    async (c, next) => {
      const id = c.req.param('channelId');
      const channel = /^[a-z0-9][a-z0-9_-]{0,62}$/.test(id) ? await findChannelSecret(deps.db, id) : null;
      if (!channel) return c.json({ received: false, error: `no channel "${id.slice(0, 64)}"` }, 404);
      c.set('channel', channel);
      return next();
    },
    requestBodyLimit(deps.maxBodyBytes),
    async (c) => {
      const answer = await handleChannelWebhook(deps, c.get('channel'), await c.req.text(), c.req.raw.headers);
      return c.json(answer.body, answer.status);
    },
  );
  return app;
}
