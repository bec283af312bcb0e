// `npm run sale:demo`: a small flash sale against a started `npm start`, paced so a person watching /console sees it
// move (docs/console.md). Creates a SKU with SALE_UNITS units, sends SALE_BUYERS buyers at it at once through the
// storefront key (one unit each), pays SALE_PAY of the holds, releases SALE_RELEASE and leaves the rest held, printing
// each step. Bounded: at most 500 buyers, SALE_STEP_MS (3000) between steps, stopped after 2 minutes; 127.0.0.1 only.
//   LASTUNIT_URL (http://127.0.0.1:4000), LASTUNIT_ADMIN_KEY and LASTUNIT_STOREFRONT_KEY (else the demo keys `npm start`
//   keeps in DATA_DIR/demo-keys.json), SALE_SKU (a new SALE-<time> each run), SALE_UNITS (20), SALE_BUYERS (60),
//   SALE_PAY (half the holds), SALE_RELEASE (a quarter of the holds), SALE_STEP_MS (3000).
import { demoKeys, lastunitBase } from './demo-keys.js';

const env = process.env;
const LOOPBACK = new Set(['127.0.0.1', 'localhost', '[::1]']);
const MAX_BUYERS = 500;
const IN_FLIGHT = 50;

// biome-ignore lint/suspicious/noExplicitAny: an example reads the answers it asked for, without generated types
type Answer = { data?: Record<string, any> | null; errors?: { message: string }[] };
type Hold = { id: string; expiresAt: string };

const count = (name: string, fallback: number, max = 100_000) => {
  const v = env[name] === undefined || env[name] === '' ? fallback : Number(env[name]);
  if (!Number.isInteger(v) || v < 0 || v > max) throw new Error(`${name} must be a whole number from 0 to ${max}`);
  return v;
};
const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function main() {
  const base = lastunitBase(env);
  const url = new URL(base);
  if (!LOOPBACK.has(url.hostname))
    throw new Error(`sale:demo runs against this machine only (127.0.0.1), not ${url.hostname}`);
  const demo =
    env.LASTUNIT_ADMIN_KEY && env.LASTUNIT_STOREFRONT_KEY
      ? undefined
      : demoKeys(env.DATA_DIR || '.data', 'LASTUNIT_ADMIN_KEY / LASTUNIT_STOREFRONT_KEY');
  const adminKey = env.LASTUNIT_ADMIN_KEY || demo?.find((k) => k.role === 'admin')?.key;
  const storefrontKey = env.LASTUNIT_STOREFRONT_KEY || demo?.find((k) => k.role === 'storefront')?.key;
  if (!adminKey || !storefrontKey)
    throw new Error(
      'the demo keys have no admin or storefront key: set LASTUNIT_ADMIN_KEY and LASTUNIT_STOREFRONT_KEY',
    );
  const units = count('SALE_UNITS', 20);
  const buyers = count('SALE_BUYERS', 60, MAX_BUYERS);
  const stepMs = count('SALE_STEP_MS', 3000, 60_000);
  const sku = env.SALE_SKU || `SALE-${Date.now().toString(36).toUpperCase()}`;

  const gql = async (key: string, query: string, variables: Record<string, unknown> = {}) => {
    const res = await fetch(`${base}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
      body: JSON.stringify({ query, variables }),
    }).catch(() => {
      throw new Error(`nothing answers at ${base}: start the server with \`npm start\` (or set LASTUNIT_URL)`);
    });
    const body = (await res.json()) as Answer;
    if (!body.data) throw new Error(`the API answered ${res.status}: ${body.errors?.[0]?.message ?? 'no data'}`);
    return body.data;
  };
  const figures = async () => {
    const d = await gql(
      adminKey,
      'query($skus: [String!]) { stockLevels(skus: $skus) { available held awaitingPayment sold } }',
      {
        skus: [sku],
      },
    );
    const s = d.stockLevels[0];
    return `available ${s.available}, held ${s.held}, awaiting payment ${s.awaitingPayment}, sold ${s.sold}`;
  };

  console.log(`sale:demo against ${base}: watch it at ${base}/console (sign in with the admin key)`);
  const created = await gql(
    adminKey,
    'mutation($input: CreateProductInput!) { createProduct(input: $input) { product { sku } userErrors { code message } } }',
    { input: { sku, name: `Flash sale ${sku}`, priceAmount: 4900, currencyCode: 'USD', initialStock: units } },
  );
  const refused = created.createProduct.userErrors as { code: string; message: string }[];
  if (refused.length)
    throw new Error(`createProduct refused: ${refused.map((e) => `${e.code}: ${e.message}`).join(' ')}`);
  console.log(`created ${sku} with ${units} units; ${buyers} buyers arrive in ${stepMs} ms`);
  await pause(stepMs);

  // every buyer at once (at most IN_FLIGHT requests open), one unit each, each its own customer
  const run = Date.now().toString(36);
  const holds: Hold[] = [];
  const refusals = new Map<string, number>();
  let next = 0;
  const buyer = async () => {
    while (next < buyers) {
      const i = next++;
      const d = await gql(
        storefrontKey,
        `mutation($input: PlaceOrderInput!) { placeOrder(input: $input) {
          order { id status reservation { expiresAt } rejection { code } } userErrors { code } } }`,
        {
          input: { customerId: `sale-${run}-${i}`, idempotencyKey: `sale-${run}-${i}`, lines: [{ sku, quantity: 1 }] },
        },
      );
      const p = d.placeOrder;
      if (p.order?.status === 'RESERVED') holds.push({ id: p.order.id, expiresAt: p.order.reservation.expiresAt });
      else {
        const code = p.userErrors[0]?.code ?? p.order?.rejection?.code ?? p.order?.status ?? 'UNKNOWN';
        refusals.set(code, (refusals.get(code) ?? 0) + 1);
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(IN_FLIGHT, buyers) }, buyer));
  const why = [...refusals].map(([code, n]) => `${code} ${n}`).join(', ');
  console.log(
    `${buyers} buyers at once: ${holds.length} holds, ${buyers - holds.length} refused${why ? ` (${why})` : ''}`,
  );
  console.log(`${sku} now: ${await figures()}`);
  await pause(stepMs);

  const pay = Math.min(holds.length, count('SALE_PAY', Math.floor(holds.length / 2)));
  let paid = 0;
  for (const h of holds.slice(0, pay)) {
    const d = await gql(
      storefrontKey,
      'mutation($input: PayOrderInput!) { payOrder(input: $input) { order { status } userErrors { code message } } }',
      { input: { orderId: h.id, payment: { provider: 'sandbox', token: 'tok_approve' } } },
    );
    if (d.payOrder.order?.status === 'CONFIRMED') paid++;
    else console.log(`payment of ${h.id} not confirmed: ${JSON.stringify(d.payOrder)}`);
  }
  console.log(`paid ${paid} of the holds (sandbox, approved): ${paid} sold`);
  console.log(`${sku} now: ${await figures()}`);
  await pause(stepMs);

  const rest = holds.slice(pay);
  const release = Math.min(rest.length, count('SALE_RELEASE', Math.floor(holds.length / 4)));
  let released = 0;
  for (const h of rest.slice(0, release)) {
    const d = await gql(
      storefrontKey,
      'mutation($input: ReleaseReservationInput!) { releaseReservation(input: $input) { order { status } userErrors { code } } }',
      { input: { orderId: h.id, reason: 'sale:demo' } },
    );
    if (!d.releaseReservation.userErrors.length) released++;
  }
  console.log(`released ${released} holds: their units are on sale again`);
  const left = rest.slice(release);
  const until = left.length ? ` until ${left.map((h) => h.expiresAt).sort()[0]} or later` : '';
  console.log(`left ${left.length} held${until} (release them from the console, or let them expire)`);
  console.log(`${sku} at the end: ${await figures()}`);
}

const stop = setTimeout(() => {
  console.error('sale:demo took longer than 2 minutes: stopped');
  process.exit(1);
}, 120_000);
main().then(
  () => clearTimeout(stop),
  (err: unknown) => {
    console.error(err instanceof Error ? err.message : String(err));
    process.exit(1);
  },
);
