// I15 for input only the database would refuse: a payment token PostgreSQL cannot store (a NUL character) is refused
// before the claim, so no unit is held, no key is left PROCESSING and a retry answers the same refusal. Real HTTP and
// the sandbox processor.
import { describe, expect, it } from 'vitest';
import { startPaymentsApp } from './support/payments.js';
import { fingerprint } from './support/ledger.js';
import { KEYS, ORDER_FIELDS } from './support/app.js';

const t = await startPaymentsApp();
const PAY = `mutation($input: PlaceOrderInput!) { placeOrder(input: $input) { replayed order { ${ORDER_FIELDS} } userErrors { code field message } } }`;
const send = async (input: Record<string, unknown>) => {
  const res = await fetch(`${t.url}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${KEYS.storefront}` },
    body: JSON.stringify({ query: PAY, variables: { input } }),
  });
  return { status: res.status, body: (await res.json()) as any };
};

describe('a payment token the database cannot store', () => {
  it('is INVALID_INPUT before anything is written: no hold, no key, and a retry answers the same', async () => {
    await t.product('NUL-TOK', 3);
    const input = {
      idempotencyKey: 'nul-tok-1',
      customerId: 'nul-c',
      lines: [{ sku: 'NUL-TOK', quantity: 1 }],
      payment: { provider: 'sandbox', token: 'tok_\u0000approve' },
    };
    const before = await fingerprint(t.db);
    for (let attempt = 0; attempt < 2; attempt++) {
      const r = await send(input);
      expect([r.status, r.body.errors]).toEqual([200, undefined]);
      expect(r.body.data.placeOrder).toMatchObject({
        order: null,
        replayed: false,
        userErrors: [{ code: 'INVALID_INPUT', field: ['input', 'payment', 'token'] }],
      });
      expect(await fingerprint(t.db)).toEqual(before);
    }
    expect(await t.inventory('NUL-TOK')).toEqual({ available: 3, reserved: 0, sold: 0 });
    // the same key with a good token is a first request (nothing was recorded under it) and is paid
    const ok = await send({ ...input, payment: { provider: 'sandbox', token: 'tok_approve' } });
    expect(ok.body.data.placeOrder).toMatchObject({ replayed: false, order: { status: 'CONFIRMED' }, userErrors: [] });
    // the sandbox also sends the approval's webhook, a moment later: let it be recorded here, not inside the next
    // test's before/after window
    await expect
      .poll(
        async () => (await t.db.query<{ n: number }>('SELECT count(*)::int AS n FROM processed_events')).rows[0]!.n,
        {
          timeout: 15_000,
        },
      )
      .toBeGreaterThan(0);
  });

  it('payOrder, confirmOrder and cancelOrder refuse a NUL in their text the same way, writing nothing', async () => {
    await t.product('NUL-LATER', 2);
    const held = await t.http(`mutation($input: PlaceOrderInput!) { placeOrder(input: $input) { order { id } } }`, {
      input: { idempotencyKey: 'nul-later', customerId: 'nul-c2', lines: [{ sku: 'NUL-LATER', quantity: 1 }] },
    });
    const orderId = held.placeOrder.order.id;
    const before = await fingerprint(t.db);
    const pay = await t.http(
      `mutation($input: PayOrderInput!) { payOrder(input: $input) { order { status } userErrors { code field } } }`,
      {
        input: { orderId, payment: { provider: 'sandbox', token: 'tok_\u0000' } },
      },
    );
    expect(pay.payOrder).toMatchObject({
      order: null,
      userErrors: [{ code: 'INVALID_INPUT', field: ['input', 'payment', 'token'] }],
    });
    const confirm = await t.http(
      `mutation($input: ConfirmOrderInput!) { confirmOrder(input: $input) { order { status } userErrors { code field } } }`,
      {
        input: { orderId, paymentReference: 'ch_\u0000' },
      },
    );
    expect(confirm.confirmOrder).toMatchObject({
      order: null,
      userErrors: [{ code: 'INVALID_INPUT', field: ['input', 'paymentReference'] }],
    });
    expect(await fingerprint(t.db)).toEqual(before);
  });
});
