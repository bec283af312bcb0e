import { Hono } from 'hono';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const asset = (name: string) => readFileSync(fileURLToPath(new URL(`./live/${name}`, import.meta.url)), 'utf8');
const SCRIPT = asset('live.js');
const STYLE = asset('live.css');

// JSON inside <script>: `<` escaped so no value can close the tag.
const inline = (v: unknown) => JSON.stringify(v).replace(/</g, '\\u003c');
const esc = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

function page(title: string, body: string, config: Record<string, unknown>): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${esc(title)}</title><link rel="stylesheet" href="/live/live.css"></head>
<body><header><a href="/">lastunit</a></header><main>${body}</main>
<script>window.LASTUNIT = ${inline(config)};</script><script src="/live/live.js"></script></body></html>`;
}

export type LivePageOptions = {
  /** the catalog page's SKUs */
  listSkus: () => Promise<string[]>;
  /**
   * A `public` key (it lives in the browser), given only when the host minted the demo keys (embedded default): the page
   * uses it. With real API_KEYS nothing is injected and the page reads a public key from `?key=` (kept in
   * localStorage). A public key sees an order only with the token placeOrder returned for it, which the page keeps.
   */
  publicKey?: string;
  /**
   * Every marketplace channel's listing of a SKU (docs/channels.md): shown on the product page and served as JSON at
   * /products/:sku/channels, which the page polls with its key. Absent: no marketplace section.
   */
  channelListings?: (sku: string) => Promise<{ channelId: string; channelName: string; desiredQuantity: number; pushedQuantity: number | null; pending: boolean }[]>;
  /**
   * The caller of an `Authorization: Bearer <key>` value, undefined for a missing or unknown key (createApp's
   * lookupCaller). /products/:sku/channels answers only a known key (any role), 401 otherwise.
   */
  lookupCaller: (authorization: string | undefined | null) => Promise<unknown>;
};

/**
 * The live pages of the Node host: `/` (catalog) and `/products/:sku`, plain HTML and one small script that reads
 * over GraphQL and listens over graphql-ws.
 * @example app.route('/', livePage({ listSkus: catalog.listSkus, publicKey, lookupCaller }))
 */
export function livePage(opts: LivePageOptions) {
  const app = new Hono();
  const key = opts.publicKey;
  app.get('/live/live.js', (c) => c.body(SCRIPT, 200, { 'content-type': 'text/javascript; charset=utf-8', 'cache-control': 'no-cache' }));
  app.get('/live/live.css', (c) => c.body(STYLE, 200, { 'content-type': 'text/css; charset=utf-8', 'cache-control': 'no-cache' }));
  app.get('/', async (c) =>
    c.html(page('lastunit: catalog', `<h1>Catalog</h1><ul class="catalog" id="catalog"><li>Loading...</li></ul><p class="live" id="live"></p>`, {
      page: 'catalog',
      key,
      skus: await opts.listSkus(),
    })),
  );
  // What each marketplace lists of the SKU: the quantity it acknowledged, what it should list, and whether a push is on its way.
  app.get('/products/:sku/channels', async (c) => {
    const authorization = c.req.header('authorization');
    if (!authorization || !/^Bearer\s/i.test(authorization) || !(await opts.lookupCaller(authorization))) {
      return c.json({ error: 'a valid API key is required (Authorization: Bearer <key>)' }, 401, { 'www-authenticate': 'Bearer', 'cache-control': 'no-store' });
    }
    const sku = c.req.param('sku');
    if (!opts.channelListings || !/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/.test(sku)) return c.json({ channels: [] });
    const rows = await opts.channelListings(sku);
    return c.json(
      { channels: rows.map((r) => ({ id: r.channelId, name: r.channelName, listed: r.pushedQuantity, desired: r.desiredQuantity, pending: r.pending })) },
      200,
      { 'cache-control': 'no-store' },
    );
  });
  app.get('/products/:sku', (c) => {
    const sku = c.req.param('sku');
    return c.html(
      page(
        `${sku} - lastunit`,
        `<div class="card"><h1 id="name">Loading...</h1><div class="price" id="price"></div>
<div class="row"><span class="badge" id="badge-${esc(sku)}"></span><span class="units" id="units-${esc(sku)}"></span></div>
<button id="buy" disabled>Reserve</button><button id="pay" class="hidden">Pay</button><button id="release" class="secondary hidden">Release my hold</button>
<div class="status" id="status" role="status" aria-live="polite"></div><p class="live" id="live"></p></div>
<section class="card channels${opts.channelListings ? '' : ' hidden'}" id="channels"><h2>On marketplaces</h2>
<table><thead><tr><th>channel</th><th>listed</th><th>should list</th><th></th></tr></thead><tbody id="channel-rows"><tr><td colspan="4">none</td></tr></tbody></table></section>`,
        { page: 'product', key, sku },
      ),
    );
  });
  return app;
}
