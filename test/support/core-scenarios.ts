// The core scenarios a production topology must pass unchanged (test/topology.test.ts through PgBouncer,
// test/host-processes.test.ts against a host of 2 processes): races for the last unit and for 100 units, one order for
// many requests with one key, paid orders whose charges match the confirmed orders, and the outbox drained by the
// relay. Real servers over HTTP; the database's account of each SKU decides (kit/races.ts, test/support/ledger.ts).
import { expect } from 'vitest';
import { race, stockAccount } from '../../kit/races.js';
import type { Queryable } from '../../db/pool.js';
import { CREATE_PRODUCT, KEYS, PLACE_ORDER } from './app.js';
import { auditLedger, type ChargeView } from './ledger.js';

export const CORE_API_KEYS = `storefront:${KEYS.storefront},admin:${KEYS.admin}`;

type Placed = { replayed: boolean; order: { id: string; status: string } | null; userErrors: { code: string }[] };
type Input = {
  idempotencyKey: string;
  customerId: string;
  lines: { sku: string; quantity: number }[];
  payment?: { provider: 'sandbox'; token: string };
};

/** The servers (endpoints) buyer i is sent to round robin, and the database to check with. */
export type CoreTarget = { endpoints: string[]; db: Queryable; sandboxUrl?: string };

async function gql(endpoint: string, query: string, variables: Record<string, unknown>, key = KEYS.storefront) {
  const res = await fetch(endpoint, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
    body: JSON.stringify({ query, variables }),
  });
  const body = (await res.json()) as { data?: any; errors?: unknown };
  if (res.status !== 200 || body.errors) throw new Error(`fault: HTTP ${res.status} ${JSON.stringify(body)}`);
  return body.data;
}

/** The scenarios, bound to one target. */
export function coreScenarios(t: CoreTarget) {
  const endpoint = (i: number) => t.endpoints[i % t.endpoints.length]!;
  const place = async (i: number, input: Input) =>
    (await gql(endpoint(i), PLACE_ORDER, { input })).placeOrder as Placed;
  const product = async (sku: string, stock: number) => {
    const input = { sku, name: sku, priceAmount: 100, currencyCode: 'USD', initialStock: stock };
    const d = await gql(endpoint(0), CREATE_PRODUCT, { input }, KEYS.admin);
    expect(d.createProduct.userErrors).toEqual([]);
  };
  const ordersOf = async (sku: string, status: string) =>
    (
      await t.db.query(
        `SELECT count(*)::int AS n FROM orders o JOIN order_lines l ON l.order_id = o.id WHERE l.sku = $1 AND o.status = $2`,
        [sku, status],
      )
    ).rows[0].n as number;

  return {
    /** 200 buyers, one unit: exactly one RESERVED order, the SKU's books conserved. */
    async lastUnit(sku: string) {
      await product(sku, 1);
      const r = await race(200, async (i) => {
        const p = await place(i, {
          idempotencyKey: `${sku}-${i}`,
          customerId: `${sku}-${i}`,
          lines: [{ sku, quantity: 1 }],
        });
        if (p.order?.status === 'RESERVED') return true;
        expect(p.userErrors[0]?.code).toBe('SOLD_OUT');
        return false;
      });
      expect(r.won).toBe(1);
      expect(await stockAccount(t.db, sku, 1)).toMatchObject({ reserved: 1, oversold: 0, conserved: true });
      expect(await ordersOf(sku, 'RESERVED')).toBe(1);
    },
    /** 300 buyers of 1 to 3 on 100 units: never more handed out than stocked, every winner has its order. */
    async hundredUnits(sku: string) {
      await product(sku, 100);
      const wants = (i: number) => 1 + (i % 3);
      const r = await race(300, async (i) => {
        const p = await place(i, {
          idempotencyKey: `${sku}-${i}`,
          customerId: `${sku}-${i}`,
          lines: [{ sku, quantity: wants(i) }],
        });
        if (p.order?.status === 'RESERVED') return true;
        expect(['SOLD_OUT', 'INSUFFICIENT_STOCK']).toContain(p.userErrors[0]?.code);
        return false;
      });
      const handedOut = r.winners.reduce((s, i) => s + wants(i), 0);
      expect(await stockAccount(t.db, sku, 100)).toMatchObject({ oversold: 0, conserved: true, reserved: handedOut });
      expect(await ordersOf(sku, 'RESERVED')).toBe(r.won);
      expect(await auditLedger(t.db, { stocked: { [sku]: 100 } })).toEqual([]);
    },
    /** 40 requests with one key and input at once: one order, every answer names it, 39 replays. */
    async oneKey(sku: string) {
      await product(sku, 10);
      const input = { idempotencyKey: `${sku}-twin`, customerId: `${sku}-buyer`, lines: [{ sku, quantity: 2 }] };
      const answers = await Promise.all(Array.from({ length: 40 }, (_, i) => place(i, input)));
      expect(new Set(answers.map((a) => a.order?.id)).size).toBe(1);
      expect(answers.filter((a) => !a.replayed)).toHaveLength(1);
      expect(await stockAccount(t.db, sku, 10)).toMatchObject({ available: 8, reserved: 2, conserved: true });
    },
    /** 30 paying buyers (sandbox tok_approve) on 12 units: 12 CONFIRMED, one net charge each, none for the refused. */
    async payments(sku: string) {
      await product(sku, 12);
      const r = await race(30, async (i) => {
        const p = await place(i, {
          idempotencyKey: `${sku}-${i}`,
          customerId: `${sku}-${i}`,
          lines: [{ sku, quantity: 1 }],
          payment: { provider: 'sandbox', token: 'tok_approve' },
        });
        return p.order?.status === 'CONFIRMED';
      });
      expect(r.won).toBe(12);
      expect(await stockAccount(t.db, sku, 12)).toMatchObject({ sold: 12, oversold: 0, conserved: true });
      const charges = t.sandboxUrl
        ? async (key: string) =>
            (await (await fetch(`${t.sandboxUrl}/_sandbox/charges/${encodeURIComponent(key)}`)).json()) as ChargeView
        : undefined;
      expect(await auditLedger(t.db, { stocked: { [sku]: 12 }, charges })).toEqual([]);
    },
    /** Every outbox row published within `withinMs` (the relay runs; LISTEN or its poll wakes it). */
    async outboxDrains(withinMs = 20_000) {
      const until = Date.now() + withinMs;
      let left = -1;
      while (Date.now() < until) {
        left = (await t.db.query(`SELECT count(*)::int AS n FROM outbox WHERE published_at IS NULL`)).rows[0].n;
        if (left === 0) break;
        await new Promise((r) => setTimeout(r, 100));
      }
      expect(left).toBe(0);
    },
  };
}
