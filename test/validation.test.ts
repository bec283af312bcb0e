import { describe, expect, it } from 'vitest';
import { KEYS, startTestApp } from './support/app.js';

const t = await startTestApp({ maxLines: 3, maxLineQuantity: 5 });
await t.product('VAL-A', 10);
await t.product('VAL-B', 10);
await t.gql(
  `mutation { createProduct(input: { sku: "VAL-DEAR", name: "Dear thing", priceAmount: 2000000000, currencyCode: "USD", initialStock: 10 }) { userErrors { code } } }`,
  {},
  KEYS.admin,
);
await t.gql(
  `mutation { createProduct(input: { sku: "VAL-EUR", name: "Euro thing", priceAmount: 100, currencyCode: "EUR", initialStock: 10 }) { userErrors { code } } }`,
  {},
  KEYS.admin,
);

const line = (sku: string, quantity: number) => ({ sku, quantity });
const snapshot = async () => {
  const { rows } = await t.db.query(`SELECT
    (SELECT count(*) FROM orders)::int AS orders, (SELECT count(*) FROM idempotency_keys)::int AS keys,
    (SELECT count(*) FROM reservations)::int AS holds, (SELECT count(*) FROM outbox)::int AS outbox,
    (SELECT json_agg(i ORDER BY sku) FROM inventory i) AS inventory`);
  return rows[0];
};

describe('placeOrder refuses bad input with a userErrors entry and writes nothing', () => {
  const cases: [string, Record<string, unknown>, string, string[]][] = [
    ['quantity 0', { lines: [line('VAL-A', 0)] }, 'INVALID_INPUT', ['input', 'lines', '0', 'quantity']],
    ['negative quantity', { lines: [line('VAL-A', -3)] }, 'INVALID_INPUT', ['input', 'lines', '0', 'quantity']],
    [
      'quantity above the per-line limit',
      { lines: [line('VAL-A', 6)] },
      'INVALID_INPUT',
      ['input', 'lines', '0', 'quantity'],
    ],
    ['no lines', { lines: [] }, 'INVALID_INPUT', ['input', 'lines']],
    [
      'too many lines',
      { lines: [line('VAL-A', 1), line('VAL-B', 1), line('VAL-EUR', 1), line('X', 1)] },
      'INVALID_INPUT',
      ['input', 'lines'],
    ],
    [
      'duplicate SKU lines',
      { lines: [line('VAL-A', 1), line('VAL-A', 2)] },
      'INVALID_INPUT',
      ['input', 'lines', '1', 'sku'],
    ],
    [
      'a key longer than 255',
      { idempotencyKey: 'k'.repeat(256), lines: [line('VAL-A', 1)] },
      'INVALID_INPUT',
      ['input', 'idempotencyKey'],
    ],
    ['an empty key', { idempotencyKey: '', lines: [line('VAL-A', 1)] }, 'INVALID_INPUT', ['input', 'idempotencyKey']],
    ['an empty customer id', { customerId: ' ', lines: [line('VAL-A', 1)] }, 'INVALID_INPUT', ['input', 'customerId']],
    [
      'a NUL character in the key',
      { idempotencyKey: 'a\u0000b', lines: [line('VAL-A', 1)] },
      'INVALID_INPUT',
      ['input', 'idempotencyKey'],
    ],
    [
      'a NUL character in the customer id',
      { customerId: 'c\u0000', lines: [line('VAL-A', 1)] },
      'INVALID_INPUT',
      ['input', 'customerId'],
    ],
    ['a NUL character in a SKU', { lines: [line('VAL\u0000A', 1)] }, 'INVALID_INPUT', ['input', 'lines', '0', 'sku']],
    ['an empty SKU', { lines: [line('', 1)] }, 'INVALID_INPUT', ['input', 'lines', '0', 'sku']],
    [
      'an unknown SKU',
      { lines: [line('VAL-A', 1), line('NO-SUCH-SKU', 1)] },
      'UNKNOWN_SKU',
      ['input', 'lines', '1', 'sku'],
    ],
    ['a total beyond what an order may hold', { lines: [line('VAL-DEAR', 2)] }, 'INVALID_INPUT', ['input', 'lines']],
    ['lines in two currencies', { lines: [line('VAL-A', 1), line('VAL-EUR', 1)] }, 'INVALID_INPUT', ['input', 'lines']],
  ];

  it.each(cases)('%s', async (_name, input, code, field) => {
    const before = await snapshot();
    const r = await t.placeOrder({ idempotencyKey: 'val-key', lines: [], ...(input as any) });
    expect(r.order).toBeNull();
    expect(r.replayed).toBe(false);
    expect(r.userErrors[0]).toMatchObject({ code, field });
    expect(r.userErrors[0]!.message.length).toBeGreaterThan(5);
    expect(await snapshot()).toEqual(before);
  });

  it('lists every problem of one input at once', async () => {
    const r = await t.placeOrder({ idempotencyKey: '', lines: [line('VAL-A', 0), line('VAL-A', 9)] });
    expect(r.userErrors.map((e) => e.field?.join('.'))).toEqual([
      'input.idempotencyKey',
      'input.lines.0.quantity',
      'input.lines.1.quantity',
      'input.lines.1.sku',
    ]);
  });

  it('still accepts the same key with a valid input afterwards (bad input did not burn the key)', async () => {
    const r = await t.placeOrder({ idempotencyKey: 'val-key', lines: [line('VAL-A', 1)] });
    expect(r).toMatchObject({ replayed: false, order: { status: 'RESERVED' }, userErrors: [] });
  });

  it('answers a malformed request (wrong type, missing field) with HTTP 400 and writes nothing', async () => {
    const before = await snapshot();
    const r = await t.gql(
      `mutation { placeOrder(input: { idempotencyKey: "x", customerId: "c", lines: [{ sku: "VAL-A", quantity: "two" }] }) { replayed } }`,
    );
    expect(r.status).toBe(400);
    expect(r.body.errors[0].message).toMatch(/Int/);
    const r2 = await t.gql(`mutation { placeOrder(input: { customerId: "c", lines: [] }) { replayed } }`);
    expect(r2.status).toBe(400);
    expect(await snapshot()).toEqual(before);
  });
});
