import pino from 'pino';
import { afterAll } from 'vitest';
import { createApp, type AppDeps } from '../../app/app.js';
import { createLivePubSub } from '../../subscriptions/pubsub.js';
import { createMetrics } from '../../common/metrics.js';
import { persistedRequest } from '../../kit/persisted.js';
import { useManifestOperations } from '../../edge/use-manifest-operations.js';
import { shippedManifest } from '../../edge/persisted-manifest.js';
import { cachedPartnerDocuments, type PartnerDocumentCacheOptions } from '../../edge/partner-documents.js';
import { KEYS, TEST_API_KEYS } from '../../kit/keys.js';
import { createTestDatabase, type TestDatabase } from './db.js';
import { useCompiledExecution } from '../../node/compiled-execution.js';
import { DEFAULTS } from '../../kit/config-defaults.js';
import type { Limits } from '../../common/config-sections.js';

const API_KEYS = TEST_API_KEYS;

export { KEYS };
export { operationId, persistedRequest } from '../../kit/persisted.js';

export type GqlResult = { status: number; body: any };
export type TestApp = Awaited<ReturnType<typeof startTestApp>>;

/**
 * The whole pipeline (Hono -> auth -> Yoga -> resolvers -> domain -> PostgreSQL) on this file's own database,
 * dropped after the file. Requests go through `app.request`, no port.
 */
export async function startTestApp(
  settings: Partial<{
    holdTtlSeconds: number;
    maxLines: number;
    maxLineQuantity: number;
    poolSize: number;
    maxActiveHolds: number;
    partnerDocuments: PartnerDocumentCacheOptions;
  }> &
    Partial<
      Pick<
        AppDeps,
        'production' | 'rateLimit' | 'keys' | 'admitBuyer' | 'clientIp' | 'buyerTokenSecret' | 'logger' | 'events'
      >
    > & { limits?: Partial<Limits> } = {},
  payments?: AppDeps['payments'] | ((db: TestDatabase['db']) => AppDeps['payments']),
  /** live wiring (pubsub, cache, notifier) built from this file's metrics */
  live: (
    metrics: ReturnType<typeof createMetrics>,
  ) => Partial<Pick<AppDeps, 'pubsub' | 'cache' | 'onOutboxWritten'>> = () => ({}),
) {
  const metrics = createMetrics();
  const tdb: TestDatabase = await createTestDatabase({
    max: settings.poolSize ?? DEFAULTS.database.poolSize,
    retry: { onRetry: (reason) => metrics.txRetries.inc({ reason }) },
  });
  const partnerDocuments = cachedPartnerDocuments(settings.partnerDocuments);
  // one app per way of executing, all on this database; `app` executes as the Node host does
  const makeApp = (executionPlugins: NonNullable<AppDeps['executionPlugins']>) =>
    createApp({
      db: tdb.db,
      metrics,
      keys: settings.keys ?? API_KEYS,
      logger: settings.logger ?? pino({ level: 'silent' }),
      pubsub: createLivePubSub(), // the Node host's default; live(metrics) may replace it
      ...live(metrics),
      limits: { ...DEFAULTS.limits, ...settings.limits },
      webhooks: DEFAULTS.webhooks,
      production: settings.production,
      rateLimit: settings.rateLimit,
      admitBuyer: settings.admitBuyer,
      clientIp: settings.clientIp,
      buyerTokenSecret: settings.buyerTokenSecret,
      events: settings.events,
      persistedOperations: (partyOf) => useManifestOperations({ manifest: shippedManifest, partyOf, partnerDocuments }),
      executionPlugins,
      settings: {
        ...DEFAULTS.orders,
        ...(settings.holdTtlSeconds !== undefined && { holdTtlSeconds: settings.holdTtlSeconds }),
        ...(settings.maxLines !== undefined && { maxLines: settings.maxLines }),
        ...(settings.maxLineQuantity !== undefined && { maxLineQuantity: settings.maxLineQuantity }),
        ...(settings.maxActiveHolds !== undefined && { maxActiveHolds: settings.maxActiveHolds }),
      },
      payments: typeof payments === 'function' ? payments(tdb.db) : payments,
    }).app;
  const app = makeApp([useCompiledExecution()]); // as the Node host runs them
  let graphqlJsApp: ReturnType<typeof makeApp> | undefined;
  afterAll(() => tdb.drop());

  /**
   * A GraphQL request to `app`, or to an app on the same database that executes without compiled documents
   * (`via: 'graphql-js'`, as the edge host executes).
   */
  async function gql(
    query: string,
    variables: Record<string, unknown> = {},
    key: string | null = KEYS.storefront,
    via: 'compiled' | 'graphql-js' = 'compiled',
  ): Promise<GqlResult> {
    const res = await (via === 'compiled' ? app : (graphqlJsApp ??= makeApp([]))).request('/graphql', {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/graphql-response+json, application/json',
        ...(key ? { authorization: `Bearer ${key}` } : {}),
      },
      body: JSON.stringify({ query, variables }),
    });
    return { status: res.status, body: await res.json() };
  }
  /** A persisted operation from edge/persisted-operations.json, by name, sent by id (GET for queries unless `method`). */
  async function persisted(
    name: string,
    variables: Record<string, unknown> = {},
    key: string | null = KEYS.partner,
    method?: 'GET' | 'POST',
  ) {
    const res = await app.request(persistedRequest(name, variables, key, method));
    return { status: res.status, headers: res.headers, body: await res.json() } as GqlResult & { headers: Headers };
  }
  /** Admin: a product with `stock` units available. */
  async function product(sku: string, stock: number, priceAmount = 1000) {
    const r = await gql(
      CREATE_PRODUCT,
      { input: { sku, name: `Product ${sku}`, priceAmount, currencyCode: 'USD', initialStock: stock } },
      KEYS.admin,
    );
    if (r.body.data?.createProduct?.userErrors?.length !== 0) throw new Error(JSON.stringify(r.body));
  }
  /** The SKU's figures: its row's, plus its stock buckets' when it has some (sku_figures, db/functions/012_sku-figures.sql). */
  async function inventory(sku: string) {
    const { rows } = await tdb.db.query('SELECT available, reserved, sold FROM sku_figures(p_sku => $1)', [sku]);
    return rows[0] as { available: number; reserved: number; sold: number };
  }
  async function placeOrder(
    input: { idempotencyKey: string; customerId?: string; lines: { sku: string; quantity: number }[] },
    key = KEYS.storefront,
  ) {
    const r = await gql(PLACE_ORDER, { input: { customerId: 'cust-1', ...input } }, key);
    if (r.status !== 200 || r.body.errors) throw new Error(`placeOrder fault: ${r.status} ${JSON.stringify(r.body)}`);
    return r.body.data.placeOrder as {
      replayed: boolean;
      order: {
        id: string;
        status: string;
        reservation: { state: string; expiresAt: string } | null;
        rejection: { code: string } | null;
      } | null;
      userErrors: { code: string; field: string[] | null; message: string; sku: string | null }[];
    };
  }
  async function release(orderId: string, key = KEYS.storefront) {
    const r = await gql(RELEASE, { input: { orderId } }, key);
    if (r.status !== 200 || r.body.errors) throw new Error(`release fault: ${r.status} ${JSON.stringify(r.body)}`);
    return r.body.data.releaseReservation as {
      order: { id: string; status: string } | null;
      userErrors: { code: string }[];
    };
  }
  // dbDirectUrl: never through the suite's transaction pooler (a LISTEN, session state)
  return {
    app,
    persisted,
    db: tdb.db,
    dbUrl: tdb.url,
    dbDirectUrl: tdb.directUrl,
    metrics,
    gql,
    product,
    inventory,
    placeOrder,
    release,
  };
}

export const CREATE_PRODUCT = `mutation($input: CreateProductInput!) { createProduct(input: $input) { product { sku } userErrors { code field message } } }`;
export const ORDER_FIELDS = `id status customerId total { amount currencyCode } lines { sku quantity unitPrice { amount } } reservation { state expiresAt } rejection { code message sku } createdAt updatedAt`;
export const PLACE_ORDER = `mutation($input: PlaceOrderInput!) { placeOrder(input: $input) { replayed order { ${ORDER_FIELDS} } userErrors { code field message sku } } }`;
export const RELEASE = `mutation($input: ReleaseReservationInput!) { releaseReservation(input: $input) { order { ${ORDER_FIELDS} } userErrors { code field message } } }`;
