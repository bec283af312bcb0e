// The failover drill (`npm run chaos:failover`, test/failover.test.ts): a primary and a streaming standby
// (kit/postgres-pair.ts), a TCP endpoint in front (kit/tcp-proxy.ts: a managed service's DNS name, a Patroni VIP), the
// real Node host on that endpoint, and a storm of buyers (half of them paying) on a few units. Mid-storm the primary is
// SIGKILLed, the standby promoted and the endpoint moved. Every buyer retries with its own idempotency key until it
// gets a definite answer, as a client told DATABASE_UNAVAILABLE should. Afterwards the new primary is audited: every
// order the API acknowledged (RESERVED / CONFIRMED) exists, nothing oversold or duplicated, the ledger balances
// (test/support/ledger.ts's rules, restated here for a database outside the suite), payments decided, outbox drained.
import pg from 'pg';
import { spawnServer } from './server.js';
import { startPostgresPair } from './postgres-pair.js';
import { startTcpProxy } from './tcp-proxy.js';
import { startSandbox } from '../payments/sandbox-server.js';
import { createDb } from '../db/pool.js';
import { migrate } from '../db/migrate.js';
import { DEFAULTS } from './config-defaults.js';
import { KEYS } from './keys.js';

export type DrillOptions = {
  synchronous: boolean;
  buyers?: number;
  units?: number;
  /** buyers in flight at once */
  concurrency?: number;
  /** the primary dies once this many buyers were acknowledged (default: a third of the units) */
  killAfterAcks?: number;
  /** async variant: the standby's WAL arrives this much later (kit/postgres-pair.ts) */
  replicationDelayMs?: number;
  /** WEB_CONCURRENCY of the host (default 1) */
  processes?: number;
  log?: (line: string) => void;
  /** told the host's output at the end (its log names every fault the API masked) */
  serverOutput?: (text: string) => void;
};

export type DrillReport = {
  synchronous: boolean;
  buyers: number;
  units: number;
  acknowledged: number;
  acknowledgedLost: number;
  refused: number;
  unanswered: number;
  answers: Record<string, number>;
  recoveredAfterMoveS: number | null;
  oversold: number;
  duplicates: number;
  ledger: string[];
  undecidedPayments: number;
  outboxLeft: number;
};

const SKU = 'DRILL-1';
const PLACE = `mutation($input: PlaceOrderInput!) { placeOrder(input: $input) { replayed order { id status } userErrors { code } } }`;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Polls `f` until it returns true or `ms` passed; returns whether it did. */
async function until(f: () => Promise<boolean>, ms: number): Promise<boolean> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await f().catch(() => false)) return true;
    await sleep(100);
  }
  return false;
}

/**
 * Runs the drill once and returns what the new primary says.
 * @example const r = await runFailoverDrill({ synchronous: true }); r.acknowledgedLost // 0
 */
export async function runFailoverDrill(o: DrillOptions): Promise<DrillReport> {
  const log = o.log ?? (() => {});
  const buyers = o.buyers ?? 400;
  const units = o.units ?? 150;
  const killAfter = o.killAfterAcks ?? Math.ceil(units / 3);
  const pair = await startPostgresPair({ synchronous: o.synchronous, replicationDelayMs: o.replicationDelayMs });
  const stops: (() => Promise<unknown>)[] = [() => pair.stop()];
  try {
    log(
      `primary :${pair.primaryPort}, standby :${pair.standbyPort} (${o.synchronous ? 'synchronous' : 'asynchronous'})`,
    );
    const admin = new pg.Client({ connectionString: pair.urlAt(pair.primaryPort) });
    await admin.connect();
    await admin.query('CREATE DATABASE lastunit');
    await admin.end();
    const ep = await startTcpProxy({ host: '127.0.0.1', port: pair.primaryPort });
    stops.unshift(() => ep.close());
    const url = pair.urlAt(ep.port, 'lastunit');
    const setup = createDb({ connectionString: url, max: 1, timeouts: DEFAULTS.database.timeouts });
    await migrate(setup);
    await setup.query(`INSERT INTO products (sku, name, price_amount, currency) VALUES ($1, 'drill', 100, 'USD')`, [
      SKU,
    ]);
    await setup.query(`INSERT INTO inventory (sku, available) VALUES ($1, $2)`, [SKU, units]);
    await setup.end();
    const secret = 'whsec_failover_drill';
    const sandbox = await startSandbox({ webhookSecret: secret, hangMs: 2_000 });
    stops.unshift(() => sandbox.close());
    const srv = await spawnServer({
      env: {
        DATABASE_URL: url,
        DATABASE_DIRECT_URL: url,
        API_KEYS: `storefront:${KEYS.storefront}`,
        WEB_CONCURRENCY: String(o.processes ?? 1),
        DATABASE_CONNECT_TIMEOUT_MS: '1000',
        DATABASE_POOL_SIZE: '16',
        RATE_LIMIT_BUYER_PER_WINDOW: '0',
        SANDBOX_PAYMENTS_URL: sandbox.url,
        PAYMENT_WEBHOOK_SECRET: secret,
        PAYMENT_TIMEOUT_MS: '1000',
        RECONCILE_INTERVAL_MS: '200',
        PAYMENT_DEADLINE_SECONDS: '5',
      },
    });
    stops.unshift(() => srv.stop());
    sandbox.configure({ webhookUrl: `${srv.url}/webhooks/payments/sandbox` });

    // the storm: every buyer retries its own key until a definite answer (or 60 s)
    const answers: Record<string, number> = {};
    const count = (k: string) => (answers[k] = (answers[k] ?? 0) + 1);
    const acked = new Map<number, string>(); // buyer -> order id it was told is RESERVED/CONFIRMED
    let refused = 0;
    let unanswered = 0;
    let movedAt = 0;
    let recoveredAt = 0;
    let failing: Promise<void> | undefined;
    const failover = async () => {
      log(`${acked.size} acknowledged: SIGKILL the primary, promote the standby, move the endpoint`);
      ep.cut();
      pair.killPrimary();
      await pair.promoteStandby();
      ep.moveTo({ host: '127.0.0.1', port: pair.standbyPort });
      movedAt = Date.now();
      log('endpoint moved to the promoted standby');
    };
    const buy = async (i: number) => {
      const input: Record<string, unknown> = {
        idempotencyKey: `drill-${i}`,
        customerId: `buyer-${i}`,
        lines: [{ sku: SKU, quantity: 1 }],
      };
      if (i % 2) input.payment = { provider: 'sandbox', token: 'tok_approve' };
      const end = Date.now() + 90_000;
      while (Date.now() < end) {
        let kind: string;
        let retryMs = 200;
        try {
          const res = await fetch(srv.endpoint, {
            method: 'POST',
            headers: { 'content-type': 'application/json', authorization: `Bearer ${KEYS.storefront}` },
            body: JSON.stringify({ query: PLACE, variables: { input } }),
          });
          const body = (await res.json()) as any;
          const code = body.errors?.[0]?.extensions?.code as string | undefined;
          const p = body.data?.placeOrder;
          if (code) {
            kind = `HTTP ${res.status} ${code}`;
            retryMs = Number(res.headers.get('retry-after') ?? 0.2) * 1000;
          } else if (p?.order && ['RESERVED', 'CONFIRMED'].includes(p.order.status)) {
            count(`${p.order.status}${p.replayed ? ' (replayed)' : ''}`);
            acked.set(i, p.order.id);
            if (movedAt && !recoveredAt) recoveredAt = Date.now();
            if (!failing && acked.size >= killAfter) failing = failover();
            return;
          } else if (p?.userErrors?.[0]?.code === 'IN_PROGRESS' || p?.order?.status === 'AWAITING_PAYMENT') {
            kind = 'IN_PROGRESS (retried)';
          } else if (p?.userErrors?.[0]?.code) {
            count(p.userErrors[0].code);
            refused++;
            if (movedAt && !recoveredAt) recoveredAt = Date.now();
            return;
          } else kind = `HTTP ${res.status} other: ${JSON.stringify(body).slice(0, 80)}`;
        } catch (err) {
          kind = `network: ${(err as Error).message}`;
        }
        count(kind);
        await sleep(retryMs);
      }
      unanswered++;
    };
    const conc = o.concurrency ?? 48;
    let next = 0;
    await Promise.all(
      Array.from({ length: conc }, async () => {
        while (next < buyers) await buy(next++);
      }),
    );
    await failing;
    o.serverOutput?.(srv.output());
    log(`storm done: ${acked.size} acknowledged, ${refused} refused, ${unanswered} unanswered`);

    // the audit, on the new primary directly
    const db = new pg.Client({ connectionString: pair.urlAt(pair.standbyPort, 'lastunit') });
    await db.connect();
    stops.unshift(() => db.end());
    const q = async (sql: string, v: unknown[] = []) => (await db.query(sql, v)).rows;
    await until(
      async () => (await q(`SELECT count(*)::int AS n FROM orders WHERE status = 'AWAITING_PAYMENT'`))[0].n === 0,
      30_000,
    );
    await until(
      async () => (await q(`SELECT count(*)::int AS n FROM outbox WHERE published_at IS NULL`))[0].n === 0,
      20_000,
    );
    const ids = [...acked.values()];
    const found = (await q(`SELECT count(*)::int AS n FROM orders WHERE id = ANY ($1::uuid[])`, [ids]))[0].n as number;
    const [inv] = await q(`SELECT available, reserved, sold FROM inventory WHERE sku = $1`, [SKU]);
    const live = (await q(`SELECT count(*)::int AS n FROM orders WHERE status IN ('RESERVED', 'CONFIRMED')`))[0].n;
    const dup = (
      await q(`SELECT count(*)::int AS n FROM (SELECT customer_id FROM orders GROUP BY 1 HAVING count(*) > 1) d`)
    )[0].n as number;
    const ledger: string[] = [];
    if (inv.available + inv.reserved + inv.sold !== units)
      ledger.push(`available + reserved + sold = ${inv.available + inv.reserved + inv.sold}, stocked ${units}`);
    const [held] = await q(
      `SELECT coalesce(sum(quantity) FILTER (WHERE state IN ('HELD', 'AWAITING_PAYMENT')), 0)::int AS held,
              coalesce(sum(quantity) FILTER (WHERE state = 'SOLD'), 0)::int AS sold FROM reservations WHERE sku = $1`,
      [SKU],
    );
    if (held.held !== inv.reserved) ledger.push(`reserved ${inv.reserved}, live holds ${held.held}`);
    if (held.sold !== inv.sold) ledger.push(`sold ${inv.sold}, sold reservations ${held.sold}`);
    for (const r of await q(
      `SELECT o.id, o.status, coalesce(p.idem_key, p.order_id::text) AS idem_key FROM orders o JOIN payments p ON p.order_id = o.id WHERE p.state <> 'EXTERNAL'`,
    )) {
      const c = (await (await fetch(`${sandbox.url}/_sandbox/charges/${encodeURIComponent(r.idem_key)}`)).json()) as {
        charges: number;
        voids: number;
      };
      const net = (c.charges ?? 0) - (c.voids ?? 0);
      if (net !== (r.status === 'CONFIRMED' ? 1 : 0)) ledger.push(`order ${r.id} ${r.status} with ${net} net charges`);
    }
    const undecided = (await q(`SELECT count(*)::int AS n FROM orders WHERE status = 'AWAITING_PAYMENT'`))[0].n;
    const outboxLeft = (await q(`SELECT count(*)::int AS n FROM outbox WHERE published_at IS NULL`))[0].n;
    return {
      synchronous: o.synchronous,
      buyers,
      units,
      acknowledged: acked.size,
      acknowledgedLost: ids.length - found,
      refused,
      unanswered,
      answers,
      recoveredAfterMoveS: recoveredAt && movedAt ? Math.round((recoveredAt - movedAt) / 10) / 100 : null,
      oversold: Math.max(0, live - units, inv.reserved + inv.sold - units),
      duplicates: dup,
      ledger,
      undecidedPayments: undecided,
      outboxLeft,
    };
  } finally {
    for (const s of stops) await s().catch(() => {});
  }
}

/** The report as the drill prints it. */
export function formatDrill(r: DrillReport): string {
  const lines = [
    `failover drill (${r.synchronous ? 'synchronous standby' : 'asynchronous replication'}): ${r.buyers} buyers, ${r.units} units, half paying`,
    `  answers seen: ${Object.entries(r.answers)
      .sort((a, b) => b[1] - a[1])
      .map(([k, n]) => `${k} ${n}`)
      .join(', ')}`,
    `  acknowledged RESERVED/CONFIRMED: ${r.acknowledged}; refused: ${r.refused}; unanswered after 90 s: ${r.unanswered}`,
    `  API answered again ${r.recoveredAfterMoveS ?? '-'} s after the endpoint moved`,
    `  on the new primary: acknowledged orders lost ${r.acknowledgedLost}, oversold ${r.oversold}, duplicate orders ${r.duplicates}`,
    `  ledger: ${r.ledger.length ? r.ledger.join('; ') : 'balances'}; undecided payments ${r.undecidedPayments}; outbox rows left ${r.outboxLeft}`,
  ];
  if (!r.synchronous && r.acknowledgedLost)
    lines.push(
      `  ${r.acknowledgedLost} shoppers were told their order was taken and it is gone: asynchronous replication breaks the promise`,
    );
  return lines.join('\n');
}
