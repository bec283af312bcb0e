// The purchase limit (I12) and the hold limit (I14) through the payment outcomes, over real HTTP with the sandbox
// processor: a sale keeps counting, a decline, a webhook decline and a reconciler expiry give the units and the hold
// back in their own transaction.
import { describe, expect, it } from 'vitest';
import { KEYS } from './support/app.js';
import { PAY, SECRET, startPaymentsApp } from './support/payments.js';
import { signPayload } from '../payments/webhook-signature.js';
import type { Processor } from '../payments/processor.js';

// hangMs above the client timeout: a tok_timeout_* payment stays AWAITING_PAYMENT until someone decides it
const t = await startPaymentsApp({ timeoutMs: 300, sandbox: { hangMs: 2_000 } });
t.sandbox.configure({ webhookUrl: undefined }); // outcomes arrive only by the paths each test drives

let n = 0;
async function buy(customerId: string, sku: string, token: string) {
  const d = await t.http(PAY, {
    input: {
      idempotencyKey: `fdp-${++n}`,
      customerId,
      lines: [{ sku, quantity: 1 }],
      payment: { provider: 'sandbox', token },
    },
  });
  const p = d.placeOrder as { order: { id: string; status: string } | null; userErrors: { code: string }[] };
  return { id: p.order?.id, status: p.userErrors[0]?.code ?? p.order!.status };
}
async function counts(sku: string, customer: string) {
  const { rows } = await t.db.query(
    `SELECT (SELECT units FROM customer_purchases WHERE customer_id = $2 AND sku = $1) AS units,
            (SELECT active FROM buyer_holds WHERE buyer = 'customer:' || $2) AS holds`,
    [sku, customer],
  );
  return rows[0] as { units: number | null; holds: number | null };
}
const limited = async (sku: string, limit: number) => {
  await t.product(sku, 100);
  const d = await t.http(
    `mutation($i: SetPurchaseLimitInput!) { setPurchaseLimit(input: $i) { userErrors { code } } }`,
    { i: { sku, limit } },
    KEYS.admin,
  );
  expect(d.setPurchaseLimit.userErrors).toEqual([]);
};

describe('fair-drop counters and payments', () => {
  it('keeps counting a bought unit (CONFIRMED) against the limit, while the hold stops counting', async () => {
    await limited('FDP-SOLD', 1);
    expect(await buy('buyer-sold', 'FDP-SOLD', 'tok_approve')).toMatchObject({ status: 'CONFIRMED' });
    expect(await counts('FDP-SOLD', 'buyer-sold')).toEqual({ units: 1, holds: null });
    expect((await buy('buyer-sold', 'FDP-SOLD', 'tok_approve')).status).toBe('PURCHASE_LIMIT');
  });

  it('gives units and hold back when the processor declines at once', async () => {
    await limited('FDP-DECLINE', 1);
    expect((await buy('buyer-decline', 'FDP-DECLINE', 'tok_decline')).status).toBe('PAYMENT_DECLINED');
    expect(await counts('FDP-DECLINE', 'buyer-decline')).toEqual({ units: null, holds: null });
    expect((await buy('buyer-decline', 'FDP-DECLINE', 'tok_approve')).status).toBe('CONFIRMED');
  });

  it('keeps an AWAITING_PAYMENT hold counted, and gives it back when a webhook declines it', async () => {
    await limited('FDP-HOOK', 1);
    const o = await buy('buyer-hook', 'FDP-HOOK', 'tok_timeout_decline');
    expect(o.status).toBe('AWAITING_PAYMENT');
    expect(await counts('FDP-HOOK', 'buyer-hook')).toEqual({ units: 1, holds: 1 });
    expect((await buy('buyer-hook', 'FDP-HOOK', 'tok_approve')).status).toBe('PURCHASE_LIMIT');
    // the processor's verdict arrives as a signed webhook
    const body = JSON.stringify({
      id: `evt_decline_${o.id}`,
      type: 'payment.failed',
      orderId: o.id,
      providerRef: 'sbx_test',
      reason: 'card_declined',
    });
    expect((await t.webhook(body, signPayload(body, SECRET))).status).toBe(200);
    await t.eventually(async () => (await t.order(o.id!)).status === 'REJECTED');
    expect(await counts('FDP-HOOK', 'buyer-hook')).toEqual({ units: null, holds: null });
  });

  it('gives units and hold back when the reconciler finds no payment after the deadline (EXPIRED)', async () => {
    await limited('FDP-LOST', 2);
    const o = await buy('buyer-lost', 'FDP-LOST', 'tok_timeout_approve');
    expect(o.status).toBe('AWAITING_PAYMENT');
    expect(await counts('FDP-LOST', 'buyer-lost')).toEqual({ units: 1, holds: 1 });
    await t.pastDeadline(o.id!, { pastRepeatWindow: true });
    const blind: Processor = { ...t.processor(), lookup: async () => 'not_found' };
    expect((await t.reconcile(blind)).expired).toBe(1);
    expect((await t.order(o.id!)).status).toBe('EXPIRED');
    expect(await counts('FDP-LOST', 'buyer-lost')).toEqual({ units: null, holds: null });
  });
});
