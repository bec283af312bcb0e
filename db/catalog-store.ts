// Every SQL statement about products, their stock and bundles, and the idempotency keys of admin stock writes.
import { z } from 'zod';
import type { Db, Queryable } from './pool.js';
import { parseRow, parseRows } from './rows.js';

export type { Queryable };

/** `version` is inventory.version: it grows on every change, so a client (or the cache) drops older figures. */
export type Availability = { sku: string; available: number; soldOut: boolean; version: number; updatedAt: Date };
/** `purchaseLimit`: the most units one customer may hold or buy (I12); null: no limit. */
export type Product = {
  sku: string;
  name: string;
  priceAmount: number;
  currency: string;
  purchaseLimit: number | null;
  availability: Availability;
};

const PRODUCT_COLUMNS = `p.sku, p.name, p.price_amount, p.currency, i.purchase_limit, i.available, i.version, i.updated_at`;
// A bundle's figures come from its components (db/functions/091_bundles.sql); the subquery runs for bundles only.
const PRODUCT_READ_COLUMNS = `p.sku, p.name, p.price_amount, p.currency, i.purchase_limit,
  CASE WHEN p.is_bundle THEN (SELECT a.available FROM bundle_available(p_bundle => p.sku) a)
       ELSE sku_available(p_sku => i.sku, p_available => i.available, p_buckets => i.buckets) END AS available,
  CASE WHEN p.is_bundle THEN (SELECT a.version FROM bundle_available(p_bundle => p.sku) a)
       ELSE sku_version(p_sku => i.sku, p_version => i.version, p_buckets => i.buckets) END AS version, i.updated_at`;
const AvailabilityRow = z.object({ sku: z.string(), available: z.number(), version: z.number(), updated_at: z.date() });
const ProductRow = AvailabilityRow.extend({
  name: z.string(),
  price_amount: z.number(),
  currency: z.string(),
  purchase_limit: z.number().nullable(),
});

function toProduct(r: z.infer<typeof ProductRow>): Product {
  return {
    sku: r.sku,
    name: r.name,
    priceAmount: r.price_amount,
    currency: r.currency.trim(),
    purchaseLimit: r.purchase_limit ?? null,
    availability: toAvailability(r),
  };
}

function toAvailability(r: z.infer<typeof AvailabilityRow>): Availability {
  return {
    sku: r.sku,
    available: r.available,
    soldOut: r.available === 0,
    version: r.version,
    updatedAt: r.updated_at,
  };
}

/** Products with their current availability, in the order asked; missing SKUs come back as null. */
export async function findProducts(db: Db, skus: string[]): Promise<(Product | null)[]> {
  if (skus.length === 0) return [];
  const { rows } = await db.query(
    `SELECT ${PRODUCT_READ_COLUMNS} FROM products p JOIN inventory i ON i.sku = p.sku WHERE p.sku = ANY ($1::text[])`,
    [skus],
  );
  const bySku = new Map(parseRows(ProductRow, rows, 'the products').map((r) => [r.sku, toProduct(r)]));
  return skus.map((s) => bySku.get(s) ?? null);
}

const SkuRow = z.object({ sku: z.string() });

/** The first `limit` SKUs, oldest product first (the catalog page's listing). */
export async function listSkus(db: Db, limit: number): Promise<string[]> {
  const { rows } = await db.query(`SELECT sku FROM products ORDER BY created_at, sku LIMIT $1`, [limit]);
  return parseRows(SkuRow, rows, 'the SKUs').map((r) => r.sku);
}

export type CreateProductResult = { ok: true; product: Product } | { ok: false; code: 'DUPLICATE_SKU' };

/** Inserts a product and its inventory row (with `initialStock` available and its purchase limit) in one statement. */
export async function createProduct(
  db: Db,
  p: {
    sku: string;
    name: string;
    priceAmount: number;
    currency: string;
    initialStock: number;
    purchaseLimit?: number | null;
  },
): Promise<CreateProductResult> {
  const { rows } = await db.run(
    `WITH p AS (
       INSERT INTO products (sku, name, price_amount, currency) VALUES ($1, $2, $3, $4)
       ON CONFLICT (sku) DO NOTHING RETURNING sku, name, price_amount, currency),
     i AS (INSERT INTO inventory (sku, available, purchase_limit) SELECT sku, $5, $6 FROM p
           RETURNING sku, available, purchase_limit, version, updated_at)
     SELECT p.sku, p.name, p.price_amount, p.currency, i.purchase_limit, i.available, i.version, i.updated_at FROM p JOIN i ON i.sku = p.sku`,
    [p.sku, p.name, p.priceAmount, p.currency, p.initialStock, p.purchaseLimit ?? null],
  );
  return rows[0]
    ? { ok: true, product: toProduct(parseRow(ProductRow, rows[0], 'the new product')) }
    : { ok: false, code: 'DUPLICATE_SKU' };
}

/** What create_bundle() answers (db/functions/091_bundles.sql). */
const CreateBundleAnswer = z.discriminatedUnion('kind', [
  z.object({ kind: z.enum(['created', 'duplicate']) }),
  z.object({ kind: z.enum(['unknown_component', 'nested']), sku: z.string() }),
]);

export type CreateBundleResult =
  | { ok: true; product: Product }
  | { ok: false; code: 'DUPLICATE_SKU' | 'UNKNOWN_COMPONENT' | 'NESTED_BUNDLE'; sku?: string };

/** A bundle of existing, non-bundle products (create_bundle in db/functions/091_bundles.sql), in one statement. */
export async function createBundle(
  db: Db,
  p: {
    sku: string;
    name: string;
    priceAmount: number;
    currency: string;
    components: { sku: string; quantity: number }[];
  },
): Promise<CreateBundleResult> {
  const { rows } = await db.run(
    'SELECT create_bundle(p_sku => $1, p_name => $2, p_price => $3, p_currency => $4, p_components => $5::jsonb) AS r',
    [p.sku, p.name, p.priceAmount, p.currency, JSON.stringify(p.components)],
  );
  const r = parseRow(CreateBundleAnswer, rows[0]?.r, 'create_bundle()');
  if (r.kind === 'duplicate') return { ok: false, code: 'DUPLICATE_SKU' };
  if (r.kind === 'unknown_component') return { ok: false, code: 'UNKNOWN_COMPONENT', sku: r.sku };
  if (r.kind === 'nested') return { ok: false, code: 'NESTED_BUNDLE', sku: r.sku };
  const [product] = await findProducts(db, [p.sku]);
  return { ok: true, product: product! };
}

const ComponentRow = z.object({ bundle_sku: z.string(), component_sku: z.string(), quantity: z.number() });

/** The components of these bundles (SKU -> [{sku, quantity}]); plain products are absent. */
export async function findComponents(
  db: Db,
  skus: string[],
): Promise<Map<string, { sku: string; quantity: number }[]>> {
  const { rows } = await db.query(
    `SELECT bundle_sku, component_sku, quantity FROM bundle_components WHERE bundle_sku = ANY ($1::text[]) ORDER BY bundle_sku, component_sku`,
    [skus],
  );
  const out = new Map<string, { sku: string; quantity: number }[]>();
  for (const r of parseRows(ComponentRow, rows, 'the bundle components'))
    out.set(r.bundle_sku, [...(out.get(r.bundle_sku) ?? []), { sku: r.component_sku, quantity: r.quantity }]);
  return out;
}

export type StockResult =
  | { ok: true; availability: Availability }
  | { ok: false; code: 'UNKNOWN_SKU' | 'STALE'; available?: number };

/** Adds units to available (I2: an explicit restock is the only way the total grows). */
export async function restock(db: Db, sku: string, quantity: number, tx?: Queryable): Promise<StockResult> {
  const run = tx
    ? (text: string, values: unknown[]) => tx.query(text, values)
    : (text: string, values: unknown[], opts?: { idempotent?: boolean }) => db.run(text, values, opts);
  const { rows } = await run(
    `WITH upd AS (
       UPDATE inventory SET available = available + $2, version = version + 1, updated_at = now() WHERE sku = $1
       RETURNING sku, available, version, updated_at),
     ev AS (  -- I9: the event is built from this statement's own RETURNING, so it carries exactly what was written
       INSERT INTO outbox (topic, aggregate_key, payload)
       SELECT 'availability', sku, jsonb_build_object('sku', sku, 'available', available, 'soldOut', available = 0,
                                                      'version', version, 'updatedAt', updated_at) FROM upd)
     SELECT sku, available, version, updated_at FROM upd`,
    [sku, quantity],
    { idempotent: false }, // adds units: never repeated after a connection lost mid-statement (it may have committed)
  );
  return rows[0]
    ? { ok: true, availability: toAvailability(parseRow(AvailabilityRow, rows[0], 'the restocked row')) }
    : { ok: false, code: 'UNKNOWN_SKU' };
}

const SetStockRow = AvailabilityRow.extend({ applied: z.boolean() });
const AvailableRow = z.object({ available: z.number() });

/**
 * Sets available to an absolute count (a stock-take adjustment). With `expected`, a compare-and-set:
 * the write happens only if available still equals it, else STALE with the current figure.
 */
export async function setStock(
  db: Db,
  sku: string,
  available: number,
  expected: number | null,
  tx?: Queryable,
): Promise<StockResult> {
  const run = tx
    ? (text: string, values: unknown[]) => tx.query(text, values)
    : (text: string, values: unknown[], opts?: { idempotent?: boolean }) => db.run(text, values, opts);
  const { rows } = await run(
    `WITH upd AS (
       UPDATE inventory i  -- a bucketed SKU's change of available is moved into its buckets (120_stock-buckets.sql)
          SET available = i.available + $2 - sku_available(p_sku => i.sku, p_available => i.available, p_buckets => i.buckets),
              version = i.version + 1, updated_at = now()
        WHERE i.sku = $1
          AND ($3::integer IS NULL OR sku_available(p_sku => i.sku, p_available => i.available, p_buckets => i.buckets) = $3)
       RETURNING i.sku, $2::integer AS available, i.version, i.updated_at),
     ev AS (  -- I9: the event is built from this statement's own RETURNING, so it carries exactly what was written
       INSERT INTO outbox (topic, aggregate_key, payload)
       SELECT 'availability', sku, jsonb_build_object('sku', sku, 'available', available, 'soldOut', available = 0,
                                                      'version', version, 'updatedAt', updated_at) FROM upd)
     SELECT sku, available, version, updated_at, true AS applied FROM upd
     UNION ALL
     SELECT sku, sku_available(p_sku => sku, p_available => available, p_buckets => buckets), version, updated_at, false
       FROM inventory WHERE sku = $1 AND NOT EXISTS (SELECT 1 FROM upd)`,
    [sku, available, expected],
    { idempotent: false }, // an absolute set repeated after other writes would undo them
  );
  if (!rows[0]) return { ok: false, code: 'UNKNOWN_SKU' };
  const r = parseRow(SetStockRow, rows[0], 'the set stock row');
  if (!r.applied) {
    // The statement's snapshot may predate the row version its UPDATE re-checked: read the current figure afresh.
    const now = await (tx ?? db).query(
      'SELECT sku_available(p_sku => sku, p_available => available, p_buckets => buckets) AS available FROM inventory WHERE sku = $1',
      [sku],
    );
    return {
      ok: false,
      code: 'STALE',
      available: now.rows[0] ? parseRow(AvailableRow, now.rows[0], 'the available count').available : r.available,
    };
  }
  return { ok: true, availability: toAvailability(r) };
}

/**
 * Sets (or with null removes) a SKU's purchase limit (`set_purchase_limit()` in db/functions/060_fair-drops.sql: the
 * inventory row locked, the per-customer counters rebuilt in the same transaction). Returns the product, null for an
 * unknown SKU.
 */
export async function setPurchaseLimit(db: Db, sku: string, limit: number | null): Promise<Product | null> {
  // an absolute set: repeating it after a connection lost mid-statement does no harm
  const { rows } = await db.run('SELECT set_purchase_limit(p_sku => $1, p_limit => $2) AS ok', [sku, limit]);
  if (!parseRow(z.object({ ok: z.boolean().nullable() }), rows[0], 'set_purchase_limit()').ok) return null;
  const [product] = await findProducts(db, [sku]);
  return product ?? null;
}

const BucketsAnswer = z.object({
  answer: z.union([
    z.object({ buckets: z.number(), available: z.number() }),
    z.object({ code: z.enum(['INVALID_BUCKETS', 'UNKNOWN_SKU', 'BUCKETS_UNSUPPORTED']), message: z.string() }),
  ]),
});

/** Splits a SKU's units across `buckets` stock rows (1: its one row again); set_stock_buckets decides and answers. */
export async function setStockBuckets(db: Db, sku: string, buckets: number) {
  // an absolute set: repeating it after a connection lost mid-statement gives the same split
  const { rows } = await db.run('SELECT set_stock_buckets(p_sku => $1, p_buckets => $2) AS answer', [sku, buckets]);
  return parseRow(BucketsAnswer, rows[0], 'set_stock_buckets()').answer;
}

/** The sweeper's even-out of every bucketed SKU's free buckets (rebalance_stock_buckets); how many buckets changed. */
export async function rebalanceStockBuckets(db: Db): Promise<number> {
  const { rows } = await db.run('SELECT rebalance_stock_buckets() AS n', []);
  return parseRow(z.object({ n: z.number() }), rows[0], 'rebalance_stock_buckets()').n;
}

/** Seeds the demo catalog; existing SKUs are left as they are. */
export async function seedProducts(
  db: Db,
  items: { sku: string; name: string; priceAmount: number; currency: string; initialStock: number }[],
): Promise<number> {
  let created = 0;
  for (const item of items) if ((await createProduct(db, item)).ok) created++;
  return created;
}

export type KeyedStockResult =
  | { kind: 'applied'; result: StockResult }
  | { kind: 'replayed'; availability: Availability }
  | { kind: 'reused' };

/** A stock operation's key row: the request it was taken for and the answer it stored (written below). */
const StockKeyRow = z.object({
  operation: z.string(),
  request_hash: z.string(),
  response: z.object({ sku: z.string(), available: z.number(), version: z.number(), updatedAt: z.string() }),
});

/**
 * A stock write under an idempotency key, applied once: the key row and the write commit in one transaction (a failed
 * write, e.g. STALE or UNKNOWN_SKU, records no key, so a retry is decided afresh). The same key again with the same
 * request replays the first answer; with another request it is `reused` and nothing is written.
 * @example await keyedStockWrite(db, { clientId, key, operation: 'restock', requestHash, retentionHours: 24 }, (tx) => restock(db, sku, 5, tx))
 */
export async function keyedStockWrite(
  db: Db,
  k: { clientId: string; key: string; operation: 'restock' | 'setStock'; requestHash: string; retentionHours: number },
  write: (tx: Queryable) => Promise<StockResult>,
): Promise<KeyedStockResult> {
  class Refused extends Error {
    constructor(readonly result: StockResult) {
      super('refused');
    }
  }
  try {
    return await db.transaction(async (tx) => {
      const claimed = await tx.query(
        `INSERT INTO stock_operation_keys (client_id, key, operation, request_hash, response, expires_at)
         VALUES ($1, $2, $3, $4, 'null'::jsonb, now() + make_interval(hours => $5))
         ON CONFLICT (client_id, key) DO NOTHING RETURNING 1`,
        [k.clientId, k.key, k.operation, k.requestHash, k.retentionHours],
      );
      if (!claimed.rowCount) {
        // another request took the key (a concurrent one waited on the unique index until it committed)
        const { rows } = await tx.query(
          'SELECT operation, request_hash, response FROM stock_operation_keys WHERE client_id = $1 AND key = $2',
          [k.clientId, k.key],
        );
        const row = parseRow(StockKeyRow, rows[0], 'the stock operation key');
        if (row.operation !== k.operation || row.request_hash !== k.requestHash) return { kind: 'reused' as const };
        const a = row.response;
        return {
          kind: 'replayed' as const,
          availability: {
            sku: a.sku,
            available: a.available,
            soldOut: a.available === 0,
            version: a.version,
            updatedAt: new Date(a.updatedAt),
          },
        };
      }
      const result = await write(tx);
      if (!result.ok) throw new Refused(result);
      const a = result.availability;
      await tx.query('UPDATE stock_operation_keys SET response = $3 WHERE client_id = $1 AND key = $2', [
        k.clientId,
        k.key,
        JSON.stringify({ sku: a.sku, available: a.available, version: a.version, updatedAt: a.updatedAt }),
      ]);
      return { kind: 'applied' as const, result };
    });
  } catch (err) {
    if (err instanceof Refused) return { kind: 'applied', result: err.result };
    throw err;
  }
}

/** One page of SKUs in SKU order after `after` (exclusive): the catalog connection's keyset scan on the primary key. */
export async function pageSkus(db: Db, after: string | null, limit: number): Promise<string[]> {
  const { rows } = await db.query(
    `SELECT sku FROM products WHERE ($1::text IS NULL OR sku > $1) ORDER BY sku LIMIT $2`,
    [after, limit],
  );
  return parseRows(SkuRow, rows, 'the SKUs').map((r) => r.sku);
}
