import { serve, type ServerType } from '@hono/node-server';
import { afterAll } from 'vitest';
import type { Db } from '../../db/pool.js';
import { startSandbox, type Sandbox, type SandboxConfig } from '../../payments/sandbox-server.js';
import { sandboxProcessor } from '../../payments/sandbox-client.js';
import type { Processor } from '../../payments/processor.js';
import { reconcileOnce } from '../../orders/reconciler.js';
import { compensateOnce } from '../../orders/compensations.js';
import { captureOnce } from '../../orders/capture.js';
import { KEYS, ORDER_FIELDS, startTestApp } from './app.js';
import { makePaymentsDue } from '../../kit/holds.js';
import { DEFAULTS } from '../../kit/config-defaults.js';
import { paymentSettingsOf } from '../../node/payments.js';

export const SECRET = 'whsec_test_secret_for_payments';
/** The payment step's settings as the host maps them from the configuration's defaults. */
export const PAYMENT_SETTINGS = paymentSettingsOf(DEFAULTS.payments);
export const TIMEOUT_MS = 400;

/** Counts transactions and statements in flight on a Db, so a processor wrapper can assert none is open (section 2 step 3). */
export function trackOpenWork(db: Db) {
  let open = 0;
  const wrap =
    <A extends unknown[], R>(fn: (...a: A) => Promise<R>) =>
    async (...a: A): Promise<R> => {
      open++;
      try {
        return await fn(...a);
      } finally {
        open--;
      }
    };
  db.transaction = wrap(db.transaction.bind(db)) as Db['transaction'];
  db.run = wrap(db.run.bind(db)) as Db['run'];
  db.query = wrap(db.query.bind(db)) as Db['query'];
  return { open: () => open };
}

/**
 * The whole pipeline served over real HTTP on 127.0.0.1 (free port), a real sandbox processor on another free port whose
 * webhooks come back to the app, this file's own database, and helpers to drive and inspect payments.
 */
export async function startPaymentsApp(
  opts: {
    sandbox?: SandboxConfig;
    timeoutMs?: number;
    deadlineSeconds?: number;
    wrap?: (p: Processor, db: Db) => Processor;
  } = {},
) {
  const sandbox: Sandbox = await startSandbox({ webhookSecret: SECRET, hangMs: 3_000, ...opts.sandbox });
  const base = sandboxProcessor({
    url: sandbox.url,
    timeoutMs: opts.timeoutMs ?? TIMEOUT_MS,
    webhookSecret: SECRET,
    webhookToleranceSeconds: DEFAULTS.webhooks.toleranceSeconds,
  });
  let processor: Processor = base;
  /** every call of the host's post-commit hook, with the SKUs whose availability changed ([] for none) */
  const outboxCalls: string[][] = [];
  const onOutboxWritten = (skus?: string[]) => {
    outboxCalls.push(skus ?? []);
  };
  const t = await startTestApp(
    { poolSize: 30 },
    (db) => {
      processor = opts.wrap ? opts.wrap(base, db) : base;
      return {
        processor,
        settings: {
          ...PAYMENT_SETTINGS,
          deadlineSeconds: opts.deadlineSeconds ?? PAYMENT_SETTINGS.deadlineSeconds,
          recoverySeconds: 2,
        },
      };
    },
    () => ({ onOutboxWritten }),
  );
  const server: ServerType = await new Promise((resolve) => {
    const s = serve({ fetch: t.app.fetch, port: 0, hostname: '127.0.0.1' }, () => resolve(s));
  });
  const url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  sandbox.configure({ webhookUrl: `${url}/webhooks/payments/sandbox` });
  afterAll(async () => {
    await sandbox.close();
    (server as import('node:http').Server).closeAllConnections();
    await new Promise<void>((r) => server.close(() => r()));
  });

  async function http(query: string, variables: Record<string, unknown>, key = KEYS.storefront) {
    const res = await fetch(`${url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
      body: JSON.stringify({ query, variables }),
    });
    const body = (await res.json()) as any;
    if (res.status !== 200 || body.errors) throw new Error(`fault: ${res.status} ${JSON.stringify(body)}`);
    return body.data;
  }
  /** placeOrder with a payment, over HTTP. */
  async function pay(key: string, sku: string, token: string, quantity = 1) {
    // one shopper per key: a customer may hold only MAX_ACTIVE_HOLDS orders at once (I14)
    const d = await http(PAY, {
      input: {
        idempotencyKey: key,
        customerId: `payer-${key}`,
        lines: [{ sku, quantity }],
        payment: { provider: 'sandbox', token },
      },
    });
    return d.placeOrder as {
      replayed: boolean;
      order: {
        id: string;
        status: string;
        reservation: { state: string } | null;
        rejection: { code: string } | null;
      } | null;
      userErrors: { code: string; field: string[] | null }[];
    };
  }
  async function order(id: string) {
    const d = await http(`query($id: ID!) { order(id: $id) { ${ORDER_FIELDS} } }`, { id });
    return d.order as {
      id: string;
      status: string;
      reservation: { state: string } | null;
      rejection: { code: string } | null;
    };
  }
  async function availability(sku: string) {
    const d = await http(`query($sku: String!) { product(sku: $sku) { availability { available soldOut } } }`, { sku });
    return d.product.availability as { available: number; soldOut: boolean };
  }
  /** POSTs a webhook body to the app as the processor would, signed with `secret` at `timestamp`. */
  async function webhook(body: string, signature: string | null) {
    const res = await fetch(`${url}/webhooks/payments/sandbox`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(signature ? { 'x-lastunit-signature': signature } : {}) },
      body,
    });
    return { status: res.status, body: (await res.json()) as any };
  }
  async function charges(orderId: string) {
    const res = await fetch(`${sandbox.url}/_sandbox/charges/${orderId}`);
    return (await res.json()) as {
      requests: number;
      charges: number;
      voids: number;
      voidRequests: number;
      errors: number;
      cancels: number;
      captures: number;
      refunds: number;
      status: string;
    };
  }
  /**
   * Moves an AWAITING_PAYMENT order's deadline into the past, so the reconciler picks it up now; `pastRepeatWindow`: also
   * past the 24 h in which it repeats a timed-out authorization; `pastGiveUp`: past the bound where it cancels.
   */
  async function pastDeadline(orderId: string, more: { pastRepeatWindow?: boolean; pastGiveUp?: boolean } = {}) {
    await makePaymentsDue(t.db, { orderIds: [orderId], ...more });
  }
  const reconcile = (p: Processor = processor) =>
    reconcileOnce({ db: t.db, metrics: t.metrics, processor: p, onOutboxWritten }, { backoffSeconds: 1 });
  const compensate = (p: Processor = processor) => compensateOnce({ db: t.db, metrics: t.metrics, processor: p });
  /** One pass of the capture worker (PAYMENT_CAPTURE=on_confirm runs it in the reconciler loop). */
  const capture = (p: Processor = processor, opts: { leaseSeconds?: number } = {}) =>
    captureOnce({ db: t.db, metrics: t.metrics, processor: p }, opts);
  /** Polls until `fn` returns a truthy value (webhooks arrive asynchronously). */
  async function eventually<T>(fn: () => Promise<T>, ms = 5_000): Promise<T> {
    const until = Date.now() + ms;
    for (;;) {
      const v = await fn();
      if (v || Date.now() > until) return v;
      await new Promise((r) => setTimeout(r, 25));
    }
  }
  return {
    ...t,
    url,
    sandbox,
    outboxCalls,
    processor: () => processor,
    http,
    pay,
    order,
    availability,
    webhook,
    charges,
    pastDeadline,
    reconcile,
    compensate,
    capture,
    eventually,
  };
}

export const PAY = `mutation($input: PlaceOrderInput!) { placeOrder(input: $input) { replayed order { ${ORDER_FIELDS} } userErrors { code field message sku } } }`;
