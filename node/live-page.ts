import { Hono } from 'hono';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

// The pages' scripts and style (node/live/): api.js holds every request the pages make, ui.js what they share.
const ASSETS: Record<string, string> = {
  'api.js': 'text/javascript',
  'ui.js': 'text/javascript',
  'catalog.js': 'text/javascript',
  'product.js': 'text/javascript',
  'admin.js': 'text/javascript',
  'live.css': 'text/css',
};
const FILES = Object.fromEntries(
  Object.keys(ASSETS).map((name) => [
    name,
    readFileSync(fileURLToPath(new URL(`./live/${name}`, import.meta.url)), 'utf8'),
  ]),
);

// JSON inside <script>: `<` escaped so no value can close the tag.
const inline = (v: unknown) => JSON.stringify(v).replace(/</g, '\\u003c');
const esc = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
const SKU = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

function page(title: string, body: string, config: Record<string, unknown>, script?: string): string {
  const scripts = script ? ['api.js', 'ui.js', script].map((s) => `<script src="/live/${s}"></script>`).join('') : '';
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${esc(title)}</title><link rel="stylesheet" href="/live/live.css"></head>
<body><header><a href="/">lastunit</a></header><main>${body}</main>
<script>window.LASTUNIT = ${inline(config)};</script>${scripts}</body></html>`;
}

const notFound = (sku: string) =>
  page(
    'Not found - lastunit',
    `<div class="card"><h1>No such product</h1><p>There is no product <code>${esc(sku)}</code>.
<a href="/">See the catalog</a>.</p></div>`,
    {},
  );

export type LivePageOptions = {
  /** the catalog page's SKUs */
  listSkus: () => Promise<string[]>;
  /** a product's name; null for an unknown SKU, whose page answers 404 */
  productName: (sku: string) => Promise<string | null>;
  /** the largest quantity one order line may ask for (MAX_LINE_QUANTITY): the quantity picker's bound with no purchase limit */
  maxLineQuantity: number;
  /**
   * A `public` key (it lives in the browser), given only when the host minted the demo keys (embedded default): the page
   * uses it. With real API_KEYS nothing is injected and the page reads a public key from `?key=` (kept in
   * localStorage). A public key sees an order only with the token placeOrder returned for it, which the page keeps.
   */
  publicKey?: string;
  /**
   * Where the page asks for a buyer token (`POST`, with its public key): the demo shop backend's path (node/live-shop.ts)
   * when this host serves it. Absent: the page orders without one, and its limits count by the client's address.
   */
  buyerTokenPath?: string;
  /**
   * Every marketplace channel's listing of a SKU (docs/channels.md): shown on the admin view of a product
   * (/admin/products/:sku) and served as JSON at /admin/products/:sku/channels to admin keys. Absent: no marketplace table.
   */
  channelListings?: (sku: string) => Promise<
    {
      channelId: string;
      channelName: string;
      desiredQuantity: number;
      pushedQuantity: number | null;
      pending: boolean;
    }[]
  >;
  /** The caller of an `Authorization: Bearer <key>` value, undefined for a missing or unknown key (createApp's lookupCaller). */
  lookupCaller: (authorization: string | undefined | null) => Promise<{ role: string } | undefined>;
};

/**
 * The live pages of the Node host: `/` (catalog), `/products/:sku` (a shopper's page) and `/admin/products/:sku` (what
 * each marketplace lists), plain HTML and small scripts that read over GraphQL and listen over graphql-ws.
 * @example app.route('/', livePage({ listSkus, productName, maxLineQuantity: 100, publicKey, lookupCaller }))
 */
export function livePage(opts: LivePageOptions) {
  const app = new Hono();
  const key = opts.publicKey;
  app.get('/live/:file', (c) => {
    const name = c.req.param('file');
    const type = ASSETS[name];
    if (!type) return c.notFound();
    return c.body(FILES[name]!, 200, { 'content-type': `${type}; charset=utf-8`, 'cache-control': 'no-cache' });
  });
  app.get('/', async (c) =>
    c.html(
      page(
        'lastunit: catalog',
        `<h1>Catalog</h1><ul class="catalog" id="catalog"><li>Loading...</li></ul><p class="live" id="live"></p>`,
        {
          page: 'catalog',
          key,
          skus: await opts.listSkus(),
        },
        'catalog.js',
      ),
    ),
  );
  app.get('/products/:sku', async (c) => {
    const sku = c.req.param('sku');
    const name = SKU.test(sku) ? await opts.productName(sku) : null;
    if (name === null) return c.html(notFound(sku), 404);
    return c.html(
      page(
        `${name} - lastunit`,
        `<div class="card"><h1 id="name">${esc(name)}</h1><div class="price" id="price"></div>
<div class="row"><span class="badge" id="badge-${esc(sku)}"></span><span class="units" id="units-${esc(sku)}"></span></div>
<div class="quantity hidden" id="quantity"><label for="qty">Quantity</label><select id="qty"></select><span class="limit" id="limit"></span></div>
<button id="buy" disabled>Reserve</button><button id="pay" class="hidden">Pay</button><button id="release" class="secondary hidden">Release my hold</button>
<div class="status" id="status" role="status" aria-live="polite"></div>
<section class="receipt hidden" id="receipt" aria-label="Receipt"></section><p class="live" id="live"></p></div>`,
        { page: 'product', key, sku, maxLineQuantity: opts.maxLineQuantity, buyerTokenPath: opts.buyerTokenPath },
        'product.js',
      ),
    );
  });

  // The admin view: what each marketplace lists of the SKU, read with an admin key from ?key= (kept for the tab only).
  app.get('/admin/products/:sku', async (c) => {
    const sku = c.req.param('sku');
    const name = SKU.test(sku) ? await opts.productName(sku) : null;
    if (name === null) return c.html(notFound(sku), 404);
    return c.html(
      page(
        `${name} (admin) - lastunit`,
        `<div class="card"><p class="eyebrow">Admin view</p><h1 id="name">${esc(name)}</h1>
<div class="row"><span class="badge" id="badge-${esc(sku)}"></span><span class="units" id="units-${esc(sku)}"></span></div><p class="live" id="live"></p></div>
<section class="card channels" id="channels"><h2>On marketplaces</h2>
<table><thead><tr><th>channel</th><th>listed</th><th>should list</th><th></th></tr></thead><tbody id="channel-rows"><tr><td colspan="4">none</td></tr></tbody></table></section>`,
        { page: 'admin', sku },
        'admin.js',
      ),
    );
  });
  // The listings as JSON: channel names and quantities are the shop's business, so only an admin key reads them.
  app.get('/admin/products/:sku/channels', async (c) => {
    const authorization = c.req.header('authorization');
    const caller =
      authorization && /^Bearer\s/i.test(authorization) ? await opts.lookupCaller(authorization) : undefined;
    const noStore = { 'cache-control': 'no-store' };
    if (!caller)
      return c.json({ error: 'a valid API key is required (Authorization: Bearer <key>)' }, 401, {
        ...noStore,
        'www-authenticate': 'Bearer',
      });
    if (caller.role !== 'admin') return c.json({ error: 'marketplace listings need an admin key' }, 403, noStore);
    const sku = c.req.param('sku');
    if (!opts.channelListings || !SKU.test(sku)) return c.json({ channels: [] }, 200, noStore);
    const rows = await opts.channelListings(sku);
    return c.json(
      {
        channels: rows.map((r) => ({
          id: r.channelId,
          name: r.channelName,
          listed: r.pushedQuantity,
          desired: r.desiredQuantity,
          pending: r.pending,
        })),
      },
      200,
      noStore,
    );
  });
  return app;
}
