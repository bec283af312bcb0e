/** The demo catalog the embedded default starts with; one product has a single unit, to watch the last-unit race. */
export const DEMO_CATALOG = [
  { sku: 'LAST-1', name: 'The Last One: signed print, 1 of 1', priceAmount: 12000, currency: 'USD', initialStock: 1 },
  { sku: 'SNKR-42', name: 'Limited sneaker, size 42', priceAmount: 18900, currency: 'USD', initialStock: 12 },
  { sku: 'TEE-BLK-M', name: 'Black tee, M', priceAmount: 2500, currency: 'USD', initialStock: 100 },
  { sku: 'MUG-WHT', name: 'White mug', priceAmount: 1400, currency: 'USD', initialStock: 40 },
  { sku: 'VINYL-LP', name: 'Tour vinyl, numbered', priceAmount: 3500, currency: 'USD', initialStock: 5 },
  // what the partner examples read (examples/partners, docs/partners.md)
  { sku: 'LAMP-1', name: 'Brass desk lamp', priceAmount: 4200, currency: 'USD', initialStock: 7 },
];

/** The partner app the demo `partner` key names (`partner:acme:<key>`): the app the partner examples publish for. */
export const DEMO_PARTNER_APP = 'acme';

/**
 * The API client of the demo `public` and `storefront` keys (`public:demo-shop:<key>`, `storefront:demo-shop:<key>`):
 * one shop, so the buyer tokens the live page's shop backend mints with the storefront key count with the public key.
 */
export const DEMO_SHOP_CLIENT = 'demo-shop';

/**
 * The demo marketplace channel: a SANDBOX channel pointing at the marketplace sandbox the Node host starts in-process
 * in development (MARKETPLACE_SANDBOX, node/marketplace.ts). Buffer 1: it lists one unit less than is available.
 */
export const DEMO_CHANNEL = {
  id: 'demo-market',
  name: 'Demo marketplace (sandbox)',
  kind: 'SANDBOX',
  buffer: 1,
  maxPushesPerSecond: 5,
} as const;
