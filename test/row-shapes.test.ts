import { describe, expect, it } from 'vitest';
import type { YogaLogger } from 'graphql-yoga';
import { startTestApp, PLACE_ORDER, RELEASE } from './support/app.js';
import { startPaymentsApp } from './support/payments.js';

// Every line the app logs, with the message of any error it was given (Yoga logs masked faults with their original).
const logged: string[] = [];
const text = (a: unknown): string =>
  a instanceof Error
    ? `${a.message} ${text((a as { originalError?: unknown }).originalError ?? '')}`
    : typeof a === 'string'
      ? a
      : JSON.stringify(a);
const record = (...args: unknown[]) => void logged.push(args.map(text).join(' '));
const logger: YogaLogger = { debug: record, info: record, warn: record, error: record };

const t = await startTestApp({ logger });
const p = await startPaymentsApp();

describe('the claim batcher and an answer of unknown shape', () => {
  it('fails the whole batch at once, each request logged, instead of repeating its requests one by one', async () => {
    await t.product('SHAPE-3', 50);
    // only the batch's statement answers nonsense; place_order (a request alone) is still the real one: this runs first
    await t.db.query(`CREATE OR REPLACE FUNCTION place_orders(p_requests jsonb, p_hold_ttl_seconds integer, p_retention_hours integer,
        p_max_holds integer DEFAULT 0) RETURNS jsonb LANGUAGE sql AS $$
      SELECT jsonb_agg(jsonb_build_object('kind', 'deferred')) FROM jsonb_array_elements(p_requests) $$`);
    logged.length = 0;
    const answers = await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        t.gql(PLACE_ORDER, {
          input: { idempotencyKey: `shape-3-${i}`, customerId: `c3-${i}`, lines: [{ sku: 'SHAPE-3', quantity: 1 }] },
        }),
      ),
    );
    const placed = answers.filter((a) => a.body.data?.placeOrder?.order?.status === 'RESERVED').length;
    const faults = answers.filter((a) => a.body.errors?.[0]?.message === 'Unexpected error.').length;
    // the first went alone (nothing in flight for its SKU); the ones that queued behind it went as one batch
    expect(placed + faults).toBe(8);
    expect(faults).toBeGreaterThan(1);
    expect(
      logged.filter(
        (l) => l.includes('place_orders() answered a shape this code does not know') && l.includes('"deferred"'),
      ),
    ).toHaveLength(faults);
    const { rows } = await t.db.query(
      `SELECT count(*)::int AS n FROM orders o JOIN order_lines l ON l.order_id = o.id WHERE l.sku = 'SHAPE-3'`,
    );
    expect(rows[0].n).toBe(placed); // none of the batch was placed again one by one
  });
});

describe('the typed boundary to PostgreSQL', () => {
  it('answers a placeOrder whose place_order() sends a kind this code does not know as a masked fault, logged with the function and the kind', async () => {
    await t.product('SHAPE-1', 5);
    // this file's own database: place_order answers a kind no version of the server has a case for
    await t.db.query(`CREATE OR REPLACE FUNCTION place_order(
        p_client_id text, p_customer_id text, p_key text, p_request_hash text, p_lines jsonb, p_hold_ttl_seconds integer,
        p_retention_hours integer, p_payment boolean DEFAULT false, p_recovery_seconds integer DEFAULT NULL,
        p_buyer text DEFAULT NULL, p_max_holds integer DEFAULT 0, p_token_hash text DEFAULT NULL,
        p_counted_customer text DEFAULT NULL)
      RETURNS jsonb LANGUAGE sql AS $$ SELECT jsonb_build_object('kind', 'waitlisted', 'sku', p_lines->0->>'sku') $$`);
    logged.length = 0;
    const r = await t.gql(PLACE_ORDER, {
      input: { idempotencyKey: 'shape-1', customerId: 'c1', lines: [{ sku: 'SHAPE-1', quantity: 1 }] },
    });
    expect(r.body.errors.map((e: { message: string }) => e.message)).toEqual(['Unexpected error.']);
    expect(r.body.data).toBeNull();
    expect(
      logged.filter(
        (l) => l.includes('place_order() answered a shape this code does not know') && l.includes('"waitlisted"'),
      ),
    ).toHaveLength(1);
  });

  it('answers a releaseReservation whose order document lacks a field as a masked fault naming the field, never a half order', async () => {
    await t.product('SHAPE-2', 5);
    await t.db.query(`CREATE OR REPLACE FUNCTION release_order(p_client_id text, p_order_id uuid, p_reason text) RETURNS jsonb
      LANGUAGE sql AS $$ SELECT jsonb_build_object('kind', 'released', 'order', order_json(p_order_id) - 'status') $$`);
    const { rows } = await t.db.query(`SELECT gen_random_uuid()::text AS id`);
    await t.db.query(
      `INSERT INTO orders (id, client_id, customer_id, status, total_amount, currency, created_at, updated_at)
                      VALUES ($1, 'storefront', 'c2', 'RESERVED', 1000, 'USD', now(), now())`,
      [rows[0].id],
    );
    logged.length = 0;
    const r = await t.gql(RELEASE, { input: { orderId: rows[0].id } });
    expect(r.body.errors.map((e: { message: string }) => e.message)).toEqual(['Unexpected error.']);
    expect(
      logged.filter(
        (l) => l.includes('release_order() answered a shape this code does not know') && l.includes('order.status'),
      ),
    ).toHaveLength(1);
  });
});

describe('the reconciler and an answer of unknown shape', () => {
  it('fails its pass with the fault (which the loop logs) instead of counting it as one more payment error', async () => {
    await p.product('SHAPE-4', 1);
    p.sandbox.configure({ webhookUrl: undefined }); // only the reconciler decides this one
    const r = await p.pay('shape-4', 'SHAPE-4', 'tok_slow_1000');
    const id = r.order!.id;
    expect(r.order!.status).toBe('AWAITING_PAYMENT');
    await p.eventually(async () => (await p.charges(id)).status === 'succeeded');
    await p.db.query(`CREATE OR REPLACE FUNCTION apply_payment_outcome(p_order_id uuid, p_outcome text, p_provider_ref text,
        p_reason text, p_key text DEFAULT NULL, p_next_action jsonb DEFAULT NULL, p_provider text DEFAULT NULL)
      RETURNS jsonb LANGUAGE sql AS $$ SELECT jsonb_build_object('kind', 'settled_elsewhere') $$`);
    await p.pastDeadline(id);
    await expect(p.reconcile()).rejects.toThrow(
      /apply_payment_outcome\(\) answered a shape this code does not know.*"settled_elsewhere"/,
    );
  });
});
