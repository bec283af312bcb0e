// The race harness of the concurrency tests: N buyers at once against one SKU through any claim path, then the
// database's account of the SKU, checked the same way whatever did the claiming. It catches a read-then-write claim's
// oversell (test/races.test.ts runs `naiveClaim` below through it), so a passing run of the product means something.
/** Anything that runs one statement: a pg.Pool, the product's Db. */
export type Queryable = { query: (text: string, values?: unknown[]) => Promise<{ rows: any[] }> };

/** One buyer's attempt: true when it was told it got its units, false when refused. Throws on a fault. */
export type Buy = (i: number) => Promise<boolean>;

export type RaceOutcome = { won: number; refused: number; winners: number[] };

/** Starts all `buyers` attempts at once (nothing awaited in between) and collects who won. */
export async function race(buyers: number, buy: Buy): Promise<RaceOutcome> {
  const results = await Promise.all(Array.from({ length: buyers }, (_, i) => buy(i)));
  const winners = results.flatMap((w, i) => (w ? [i] : []));
  return { won: winners.length, refused: buyers - winners.length, winners };
}

export type StockAccount = { available: number; reserved: number; sold: number; oversold: number; conserved: boolean };

/** What the inventory row says after a race on a SKU that started with `stock` units. */
export async function stockAccount(db: Queryable, sku: string, stock: number): Promise<StockAccount> {
  const { rows } = await db.query('SELECT available, reserved, sold FROM inventory WHERE sku = $1', [sku]);
  const r = rows[0] as { available: number; reserved: number; sold: number };
  return {
    ...r,
    oversold: Math.max(0, r.reserved + r.sold - stock),
    conserved: r.available + r.reserved + r.sold === stock,
  };
}

/**
 * The cautionary claim, never the product's: read the count, decide in the application, write back what was read
 * minus `quantity`. Each statement is its own transaction and takes no lock across the two, so buyers who read the
 * same count all "win". `available` never goes below 0 (it is set to read - quantity >= 0), so no constraint fires.
 * @example const buy = (i) => naiveClaim(pool, 'LAST', 1)
 */
export async function naiveClaim(db: Queryable, sku: string, quantity: number): Promise<boolean> {
  const { rows } = await db.query('SELECT available FROM inventory WHERE sku = $1', [sku]);
  const read = rows[0]?.available ?? 0;
  if (read < quantity) return false;
  await db.query('UPDATE inventory SET available = $2, reserved = reserved + $3 WHERE sku = $1', [
    sku,
    read - quantity,
    quantity,
  ]);
  return true;
}

/** A counter's value by label from a Prometheus text exposition (0 when that series was never incremented). */
export function counterValue(metricsText: string, name: string, labels: Record<string, string>): number {
  const want = Object.entries(labels).map(([k, v]) => `${k}="${v}"`);
  let total = 0;
  for (const line of metricsText.split('\n')) {
    const m = /^(\w+)(?:\{([^}]*)\})? (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const have = (m[2] ?? '').split(',');
    if (want.every((w) => have.includes(w))) total += Number(m[3]);
  }
  return total;
}
