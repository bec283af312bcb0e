// Marketplace webhook signatures through the real route (POST /webhooks/channels/:channelId over HTTP): verified with
// Web Crypto (channels/inbound.ts), signed here with node:crypto (channels/sign.ts), as a marketplace would. A valid
// delivery changes stock; a tampered body, a wrong secret, a stale timestamp or a malformed header answer 400 and
// change nothing. And no hand-written SHA-256 is left in the source tree.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { startChannelsApp } from './support/channels.js';
import { SANDBOX_SIGNATURE_HEADER } from '../channels/inbound.js';
import { signSandbox, signShopify } from '../channels/sign.js';

const t = await startChannelsApp();
const processed = async (source: string) =>
  Number((await t.db.query(`SELECT count(*)::int AS n FROM processed_events WHERE source = $1`, [source])).rows[0].n);
const sandboxBody = (eventId: string, sku: string) =>
  JSON.stringify({ eventId, type: 'order.created', externalOrderId: `o-${eventId}`, lines: [{ sku, quantity: 1 }] });

describe('SANDBOX signature (x-lastunit-signature)', () => {
  it('accepts a valid signature and refuses a tampered body, a wrong secret, a stale timestamp and malformed headers with 400 and no effect', async () => {
    await t.product('SIG-S', 5);
    const { webhookSecret } = await t.createChannel({ id: 'sigs' });
    const secret = webhookSecret!;
    const body = sandboxBody('e-ok', 'SIG-S');
    const refused = async (b: string, header: string) => {
      const r = await t.post('sigs', b, { [SANDBOX_SIGNATURE_HEADER]: header });
      return [r.status, r.body.received];
    };
    // tampered: signed one body, sent another (quantity 1 -> 2)
    expect(await refused(body.replace('"quantity":1', '"quantity":2'), signSandbox(body, secret))).toEqual([
      400,
      false,
    ]);
    // wrong secret
    expect(await refused(body, signSandbox(body, `${secret}x`))).toEqual([400, false]);
    // stale: ten minutes old (tolerance 300 s), correctly signed
    expect(await refused(body, signSandbox(body, secret, Math.floor(Date.now() / 1000) - 600))).toEqual([400, false]);
    // malformed: no v1, a short or non-hex v1, a v1 of another length
    const good = signSandbox(body, secret);
    const ts = good.split(',')[0]!;
    expect(await refused(body, ts)).toEqual([400, false]);
    expect(await refused(body, `${ts},v1=abc`)).toEqual([400, false]);
    expect(await refused(body, `${ts},v1=${'z'.repeat(64)}`)).toEqual([400, false]);
    expect(await refused(body, `${good}00`)).toEqual([400, false]);
    expect(await t.inventory('SIG-S')).toEqual({ available: 5, reserved: 0, sold: 0 });
    expect(await processed('channel:sigs')).toBe(0);
    // valid, also among several v1 entries (secret rotation) and in upper case
    const ok = await t.post('sigs', body, {
      [SANDBOX_SIGNATURE_HEADER]: `${ts},v1=${'0'.repeat(64)},${good.split(',')[1]!.toUpperCase().replace('V1=', 'v1=')}`,
    });
    expect([ok.status, ok.body.result]).toEqual([200, 'confirmed']);
    expect(await t.inventory('SIG-S')).toEqual({ available: 4, reserved: 0, sold: 1 });
    expect(await processed('channel:sigs')).toBe(1);
  });
});

describe('SHOPIFY signature (X-Shopify-Hmac-Sha256, base64)', () => {
  it('accepts the base64 HMAC of the raw body with the app secret, and refuses a tampered body or another secret', async () => {
    await t.product('SIG-H', 5);
    const appSecret = `shpss_${'a1b2c3d4'.repeat(4)}`;
    await t.createChannel({
      id: 'sigh',
      kind: 'SHOPIFY',
      endpoint: 'http://127.0.0.1:9/admin/api/2025-10/graphql.json',
      webhookSecret: appSecret,
    });
    const body = `{"id":820982911946154508,"admin_graphql_api_id":"gid://shopify/Order/820982911946154508","line_items":[{"id":1,"sku":"SIG-H","quantity":2}]}`;
    const headers = (hmac: string) => ({
      'x-shopify-topic': 'orders/create',
      'x-shopify-hmac-sha256': hmac,
      'x-shopify-event-id': 'shev-1',
      'x-shopify-webhook-id': 'wh-1',
    });
    expect(
      (await t.post('sigh', body.replace('"quantity":2', '"quantity":3'), headers(signShopify(body, appSecret))))
        .status,
    ).toBe(400);
    expect((await t.post('sigh', body, headers(signShopify(body, 'shpss_another_secret_entirely')))).status).toBe(400);
    expect((await t.post('sigh', body, headers(signShopify(body, appSecret).slice(0, -2)))).status).toBe(400);
    expect(
      (await t.post('sigh', body, headers(Buffer.from(signShopify(body, appSecret), 'base64').toString('hex')))).status,
    ).toBe(400);
    expect(await t.inventory('SIG-H')).toEqual({ available: 5, reserved: 0, sold: 0 });
    const ok = await t.post('sigh', body, headers(signShopify(body, appSecret)));
    expect([ok.status, ok.body.result]).toEqual([200, 'confirmed']);
    expect(await t.inventory('SIG-H')).toEqual({ available: 3, reserved: 0, sold: 2 });
  });
});

describe('no hand-written crypto', () => {
  it('has no SHA-256 round constants in the source tree (signatures are Web Crypto or node:crypto)', () => {
    const root = join(import.meta.dirname, '..');
    const roundConstant = new RegExp('0x' + '428a2f98', 'i'); // split, so this file does not match itself
    const hits: string[] = [];
    const walk = (dir: string) => {
      for (const name of readdirSync(dir)) {
        if (name === 'node_modules' || name.startsWith('.') || name === 'dist') continue;
        const p = join(dir, name);
        if (statSync(p).isDirectory()) walk(p);
        else if (/\.(ts|js|mjs)$/.test(name) && roundConstant.test(readFileSync(p, 'utf8')))
          hits.push(p.slice(root.length + 1));
      }
    };
    walk(root);
    expect(hits).toEqual([]);
  });
});
