import { serve, type ServerType } from '@hono/node-server';
import { afterAll } from 'vitest';
import { KEYS, startTestApp } from './app.js';
import { SANDBOX_SIGNATURE_HEADER } from '../../channels/inbound.js';
import { signSandbox, signShopify } from '../../channels/sign.js';

export const CHANNEL_FIELDS = `id name kind endpoint buffer maxListed percent zeroAtOrBelow maxPushesPerSecond`;

/**
 * The whole pipeline served over real HTTP on 127.0.0.1 (free port) on this file's own database, with helpers to create
 * channels and deliver signed marketplace webhooks to it.
 */
export async function startChannelsApp(opts: Parameters<typeof startTestApp>[0] = {}) {
  const t = await startTestApp({ poolSize: 30, ...opts });
  const server: ServerType = await new Promise((resolve) => {
    const s = serve({ fetch: t.app.fetch, port: 0, hostname: '127.0.0.1' }, () => resolve(s));
  });
  const url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  afterAll(async () => {
    (server as import('node:http').Server).closeAllConnections();
    await new Promise<void>((r) => server.close(() => r()));
  });

  async function admin(query: string, variables: Record<string, unknown> = {}) {
    const r = await t.gql(query, variables, KEYS.admin);
    if (r.status !== 200 || r.body.errors) throw new Error(`fault: ${r.status} ${JSON.stringify(r.body)}`);
    return r.body.data;
  }
  async function createChannel(input: Record<string, unknown>) {
    const d = await admin(
      `mutation($input: CreateChannelInput!) { createChannel(input: $input) { channel { ${CHANNEL_FIELDS} } webhookSecret userErrors { code field message } } }`,
      { input: { name: `Channel ${input.id}`, kind: 'SANDBOX', endpoint: 'http://127.0.0.1:9/none', ...input } },
    );
    return d.createChannel as {
      channel: any;
      webhookSecret: string | null;
      userErrors: { code: string; field: string[]; message: string }[];
    };
  }
  async function listings(channelId: string, skus: string[]) {
    const d = await admin(
      `query($id: ID!, $skus: [String!]!) { channel(id: $id) { listings(skus: $skus) { sku desiredQuantity pushedQuantity pushedAt pending } } }`,
      { id: channelId, skus },
    );
    return d.channel.listings as ({
      sku: string;
      desiredQuantity: number;
      pushedQuantity: number | null;
      pushedAt: string | null;
      pending: boolean;
    } | null)[];
  }
  async function post(channelId: string, body: string, headers: Record<string, string>) {
    const res = await fetch(`${url}/webhooks/channels/${channelId}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body,
    });
    return { status: res.status, body: (await res.json()) as { received: boolean; result?: string; error?: string } };
  }
  /** A SANDBOX-kind delivery signed with `secret`. */
  const sandboxEvent = (
    channelId: string,
    secret: string,
    e: { eventId: string; type?: string; externalOrderId: string; lines?: { sku: string; quantity: number }[] },
  ) => {
    const body = JSON.stringify({ type: 'order.created', lines: [], ...e });
    return post(channelId, body, { [SANDBOX_SIGNATURE_HEADER]: signSandbox(body, secret) });
  };
  /** A SHOPIFY-kind delivery: Shopify's headers and a trimmed orders/create or orders/cancelled body. */
  const shopifyEvent = (
    channelId: string,
    secret: string,
    e: {
      eventId: string;
      topic: 'orders/create' | 'orders/cancelled';
      orderId: string;
      lines?: { sku: string; quantity: number }[];
    },
  ) => {
    const body = `{"id":${e.orderId},"admin_graphql_api_id":"gid://shopify/Order/${e.orderId}","currency":"USD","line_items":${JSON.stringify(
      (e.lines ?? []).map((l, i) => ({ id: 466157049 + i, sku: l.sku, quantity: l.quantity, title: l.sku })),
    )}${e.topic === 'orders/cancelled' ? ',"cancelled_at":"2026-11-30T02:00:00-05:00","cancel_reason":"customer"' : ''}}`;
    return post(channelId, body, {
      'x-shopify-topic': e.topic,
      'x-shopify-hmac-sha256': signShopify(body, secret),
      'x-shopify-shop-domain': 'lastunit-test.myshopify.com',
      'x-shopify-api-version': '2025-10',
      'x-shopify-webhook-id': `wh-${e.eventId}`,
      'x-shopify-event-id': e.eventId,
      'x-shopify-triggered-at': new Date().toISOString(),
    });
  };
  async function restock(sku: string, quantity: number) {
    const d = await admin(`mutation($input: RestockInput!) { restock(input: $input) { userErrors { code } } }`, {
      input: { sku, quantity },
    });
    if (d.restock.userErrors.length) throw new Error(JSON.stringify(d));
  }
  return { ...t, url, admin, createChannel, listings, post, sandboxEvent, shopifyEvent, restock };
}
