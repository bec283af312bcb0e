// The live page's demo shop backend (development only, LIVE_SHOP_BACKEND): what a shop's own server does for its
// pages, so the demo's purchase and hold limits count a customer the shop vouched for (docs/live.md#buyer-tokens).
// The browser asks it for a buyer token; it mints one with the storefront key of the page's API client (a secret key
// the browser never sees) for the demo customer of that browser, a random id kept in an HttpOnly SameSite=Strict
// cookie. A real shop mints for its signed-in customer instead.
import { Hono } from 'hono';
import { getCookie, setCookie } from 'hono/cookie';
import type { Caller } from '../common/caller.js';

/** The cookie holding a browser's demo customer id (HttpOnly: the page's scripts can neither read nor set it). */
export const DEMO_CUSTOMER_COOKIE = 'lastunit_demo_customer';
const DEMO_CUSTOMER = /^demo-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const YEAR_SECONDS = 365 * 86_400;

const MINT = `mutation Mint($input: CreateBuyerTokenInput!) {
  createBuyerToken(input: $input) { token expiresAt userErrors { code message } }
}`;

export type LiveShopOptions = {
  /** The caller of an `Authorization: Bearer <key>` value, undefined for a missing or unknown key. */
  lookupCaller: (authorization: string | undefined | null) => Promise<Caller | undefined>;
  /** A storefront key of API client `clientId`, undefined when this host has none. */
  storefrontKeyOf: (clientId: string) => Promise<string | undefined>;
  /** This host's GraphQL endpoint (known once it listens): the backend calls the API as any shop's server does. */
  endpoint: () => string;
  /** how long the tokens it mints are valid (LIVE_SHOP_TOKEN_TTL_SECONDS) */
  ttlSeconds: number;
};

/**
 * `POST /live/buyer-token` with the page's public key (`Authorization: Bearer <public key>`): answers
 * `{ token, expiresAt, customerId }`, a buyer token of that key's client for this browser's demo customer. 401 without
 * a known key, 403 for another role than public, 409 when no storefront key shares the public key's client.
 * @example app.route('/', liveShop({ lookupCaller, storefrontKeyOf, endpoint: () => `${url}/graphql`, ttlSeconds: 900 }))
 */
export function liveShop(opts: LiveShopOptions) {
  const app = new Hono();
  app.post('/live/buyer-token', async (c) => {
    const noStore = { 'cache-control': 'no-store' };
    const caller = await opts.lookupCaller(c.req.header('authorization'));
    if (!caller)
      return c.json({ error: 'a valid public API key is required (Authorization: Bearer <key>)' }, 401, noStore);
    if (caller.role !== 'public')
      return c.json({ error: 'the shop backend vouches for browsers on the public key only' }, 403, noStore);
    const storefrontKey = await opts.storefrontKeyOf(caller.clientId);
    if (!storefrontKey)
      return c.json(
        { error: "no storefront key shares this public key's API client: orders count by address" },
        409,
        noStore,
      );
    const known = getCookie(c, DEMO_CUSTOMER_COOKIE);
    const customerId = known && DEMO_CUSTOMER.test(known) ? known : `demo-${crypto.randomUUID()}`;
    const res = await fetch(opts.endpoint(), {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${storefrontKey}` },
      body: JSON.stringify({ query: MINT, variables: { input: { customerId, ttlSeconds: opts.ttlSeconds } } }),
    });
    const body = (await res.json().catch(() => null)) as {
      data?: {
        createBuyerToken?: { token: string | null; expiresAt: string | null; userErrors: { message: string }[] };
      };
      errors?: { message: string }[];
    } | null;
    const minted = body?.data?.createBuyerToken;
    if (!minted?.token) {
      const why = minted?.userErrors[0]?.message ?? body?.errors?.[0]?.message ?? `HTTP ${res.status}`;
      return c.json({ error: `createBuyerToken refused: ${why}` }, 502, noStore);
    }
    setCookie(c, DEMO_CUSTOMER_COOKIE, customerId, {
      httpOnly: true,
      sameSite: 'Strict',
      secure: new URL(c.req.url).protocol === 'https:',
      path: '/live',
      maxAge: YEAR_SECONDS,
    });
    return c.json({ token: minted.token, expiresAt: minted.expiresAt, customerId }, 200, noStore);
  });
  return app;
}
