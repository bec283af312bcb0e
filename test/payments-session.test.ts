import { afterAll, describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnServer } from '../kit/server.js';
import { sessionScript } from './support/session.js';

// docs/payments.md's curl session (every checkout flow), run as written against `npm start`'s host: embedded
// PostgreSQL, the in-process sandbox, demo keys.
const doc = readFileSync('docs/payments.md', 'utf8');
const block = /<!-- payments-session[^>]*-->\s*```sh\n([\s\S]*?)```/.exec(doc)?.[1];
const dataDir = mkdtempSync(path.join(os.tmpdir(), 'lastunit-payments-session-'));
const server = await spawnServer({
  env: {
    DATA_DIR: dataDir,
    DATABASE_URL: '',
    API_KEYS: '',
    NODE_ENV: 'development',
    RECONCILE_INTERVAL_MS: '200',
    // the session's captureOrder is the only capture (docs/payments.md: with on_confirm the reconciler's own capture
    // of that payment could be in flight at that moment, and captureOrder answers PAYMENT_IN_FLIGHT)
    PAYMENT_CAPTURE: 'manual',
  },
});
afterAll(async () => {
  await server.stop('SIGTERM', 20_000);
  rmSync(dataDir, { recursive: true, force: true });
});

describe('docs/payments.md', () => {
  it('runs the checkout session as written and every step answers what the page says', () => {
    expect(block).toBeTruthy();
    const script = sessionScript(block!, server.output(), dataDir); // the address from the start banner, as a reader takes it
    const out = execFileSync(
      'bash',
      ['-euo', 'pipefail', '-c', `curl() { command curl --fail-with-body "$@"; echo; }\n${script}`],
      { encoding: 'utf8', timeout: 60_000 },
    );
    const answers = out
      .trim()
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l));
    expect(answers).toHaveLength(12);
    const [
      created,
      held,
      declined,
      approved,
      threeDs,
      action,
      afterAction,
      confirmed,
      captured,
      cancelled,
      catalog,
      orders,
    ] = answers.map((a) => a.data ?? a);
    expect(created.createProduct).toEqual({ product: { sku: 'PAY-DEMO' }, userErrors: [] });
    expect(held.placeOrder.order.status).toBe('RESERVED');
    expect(declined.payOrder).toEqual({
      order: { status: 'RESERVED', reservation: { state: 'HELD' }, payment: { state: 'DECLINED' } },
      nextAction: null,
      userErrors: [{ code: 'PAYMENT_DECLINED' }],
    });
    expect(approved.payOrder).toEqual({
      order: { status: 'CONFIRMED', reservation: { state: 'SOLD' }, payment: { state: 'AUTHORIZED' } },
      nextAction: null,
      userErrors: [],
    });
    expect(threeDs.payOrder).toMatchObject({
      order: { status: 'AWAITING_PAYMENT', payment: { state: 'ACTION_REQUIRED' } },
      nextAction: { type: 'three_d_secure' },
      userErrors: [],
    });
    expect(action).toEqual({ status: 'succeeded' });
    expect(afterAction.order).toEqual({ status: 'CONFIRMED', payment: { state: 'AUTHORIZED' } });
    expect(confirmed.confirmOrder).toEqual({
      replayed: false,
      order: { status: 'CONFIRMED', payment: { state: 'EXTERNAL', provider: 'external', reference: 'ext_42' } },
      userErrors: [],
    });
    expect(captured.captureOrder).toEqual({ order: { payment: { captured: true } }, userErrors: [] });
    expect(cancelled.cancelOrder).toEqual({
      order: { status: 'CANCELLED', reservation: { state: 'RELEASED' } },
      userErrors: [],
    });
    expect(catalog.catalog.edges).toHaveLength(1);
    expect(catalog.catalog.pageInfo.hasNextPage).toBe(true);
    expect(orders.orders.edges.map((e: { node: { status: string } }) => e.node.status)).toEqual([
      'CONFIRMED',
      'CONFIRMED',
      'CANCELLED',
    ]);
  });
});
