import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { checkLayers, readFloors, readProduct } from '../scripts/layers.js';

const ROOT = path.resolve(import.meta.dirname, '..');
const floors = readFloors(readFileSync(path.join(ROOT, 'docs/architecture.md'), 'utf8'));

describe('the layers of docs/architecture.md', () => {
  it('names every product folder once, from node/ down to common/', () => {
    const all = floors.flat();
    expect(new Set(all).size).toBe(all.length);
    expect(all[0]).toBe('node');
    expect(all.at(-1)).toBe('common');
    expect(all).toEqual(
      expect.arrayContaining(['edge', 'app', 'schema', 'resolvers', 'orders', 'subscriptions', 'payments', 'db']),
    );
  });

  it('holds in the code: every import points down (or stays in its folder)', () => {
    const files = readProduct(ROOT, floors);
    expect(files.size).toBeGreaterThan(50);
    const violations = checkLayers(files, floors);
    expect(violations.map((v) => `${v.file} -> ${v.imports}: ${v.why}`)).toEqual([]);
  });

  it('catches an import that points up, one between neighbours, and one into test code', () => {
    const files = new Map([
      [
        'db/pool.ts',
        `import type { Metrics } from '../common/metrics.js';\nimport { createOrders } from '../orders/orders.js';`,
      ],
      ['payments/stripe.ts', `import type { LivePubSub } from '../subscriptions/pubsub.js';`],
      ['orders/x.ts', `const m = await import('../test/support/db.js');`],
      ['common/hash.ts', `export * from '../db/retry.js';`],
    ]);
    expect(checkLayers(files, floors).map((v) => `${v.file} -> ${v.imports}`)).toEqual([
      'db/pool.ts -> orders/orders.js',
      'payments/stripe.ts -> subscriptions/pubsub.js',
      'orders/x.ts -> test/support/db.js',
      'common/hash.ts -> db/retry.js',
    ]);
  });
});
