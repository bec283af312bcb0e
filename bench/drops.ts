// `npm run bench:drops`: who gets the units of a hyped drop (docs/drops.md, "Fairness"). 100 units; 2,000 shoppers
// each send one request at a random moment of the first two seconds; 20 bots each fire 100 parallel requests (one
// customer each, many connections) the moment it opens. Three modes: plain first come (placeOrder), QUEUE (enterDrop
// into the waiting room, whose opensAt comes once the crowd has been answered; then admitted shoppers order) and DRAW
// (entries until closesAt, as late, the pick, then the winners order). Prints each mode's bot share of the units sold, units sold, oversold (0) and the time
// to sell out; writes bench/results/drops.json and drops.svg (git-ignored). Bounded: 6,000 requests per mode, all to
// 127.0.0.1. DATABASE_URL: create lastunit_bench_* there (else an embedded PostgreSQL).
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { createBenchDatabase } from './database.js';
import { startServer, type ServerProcess } from './server.js';

const UNITS = 100;
const SHOPPERS = 2_000;
const BOTS = 20;
const BOT_REQUESTS = 100;
const WINDOW_MS = 2_000;
/** QUEUE's opensAt and DRAW's closesAt after the open: the crowd's requests are all answered by then */
const START_AFTER_MS = 20_000;
const MODES = ['FIRST_COME', 'QUEUE', 'DRAW'] as const;
type Mode = (typeof MODES)[number];
type Row = {
  mode: Mode;
  botShare: number;
  botsOfEntrants: number;
  sold: number;
  oversold: number;
  sellOutMs: number | null;
  answers: Record<string, number>;
};

const RESULTS = path.join(path.dirname(fileURLToPath(import.meta.url)), 'results');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function client(srv: ServerProcess) {
  let n = 0;
  /** what every crowd request was answered: a userErrors code, OK, HTTP_<status> or FAULT (no answer) */
  const tally: Record<string, number> = {};
  const count = (k: string) => (tally[k] = (tally[k] ?? 0) + 1);
  const gql = async (query: string, variables: Record<string, unknown>, key = srv.keys.storefront) => {
    const res = await fetch(srv.endpoint, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
      body: JSON.stringify({ query, variables }),
    }).catch((err) => {
      count('FAULT');
      throw err;
    });
    const body = (await res.json()) as { data?: Record<string, { userErrors?: { code: string }[] }>; errors?: unknown };
    if (res.status !== 200 || body.errors) {
      const code = (body.errors as { extensions?: { code?: string }; message?: string }[] | undefined)?.[0];
      count(`HTTP_${res.status}_${code?.extensions?.code ?? code?.message?.slice(0, 40) ?? ''}`);
    } else for (const v of Object.values(body.data ?? {})) count(v.userErrors?.[0]?.code ?? 'OK');
    return body;
  };
  return {
    gql,
    tally,
    place: (customerId: string, sku: string) =>
      gql(`mutation($i: PlaceOrderInput!) { placeOrder(input: $i) { userErrors { code } } }`, {
        i: { idempotencyKey: `b-${++n}`, customerId, lines: [{ sku, quantity: 1 }] },
      }).catch(() => null),
    enter: (customerId: string, dropId: string) =>
      gql(`mutation($i: EnterDropInput!) { enterDrop(input: $i) { userErrors { code } } }`, {
        i: { idempotencyKey: `e-${++n}`, customerId, dropId },
      }).catch(() => null),
  };
}

/**
 * Everyone's first requests: bots all at once at t0, shoppers each at a random moment of the window. Customers are
 * new in every mode (`<mode>-bot3`, `<mode>-s17`), so one mode's holds do not count against the next.
 */
async function crowd(mode: Mode, send: (customer: string) => Promise<unknown>): Promise<void> {
  const bots = Array.from({ length: BOTS }, (_, b) =>
    Promise.all(Array.from({ length: BOT_REQUESTS }, () => send(`${mode}-bot${b}`))),
  );
  const shoppers = Array.from({ length: SHOPPERS }, (_, s) =>
    sleep(Math.random() * WINDOW_MS).then(() => send(`${mode}-s${s}`)),
  );
  await Promise.all([...bots, ...shoppers]);
}

/** QUEUE and DRAW: every admitted entry's shopper (or bot) orders, as its subscription would tell it to. */
async function buyAdmitted(
  db: pg.Pool,
  c: ReturnType<typeof client>,
  dropId: string,
  sku: string,
  until: () => boolean,
) {
  const done = new Set<string>();
  while (!until()) {
    const { rows } = await db.query(`SELECT customer_id FROM drop_entries WHERE drop_id = $1 AND state = 'ADMITTED'`, [
      dropId,
    ]);
    const fresh = rows.map((r) => r.customer_id as string).filter((x) => !done.has(x));
    for (const x of fresh) done.add(x);
    await Promise.all(fresh.map((x) => c.place(x, sku)));
    await sleep(50);
  }
}

async function runMode(srv: ServerProcess, db: pg.Pool, mode: Mode): Promise<Row> {
  const c = client(srv);
  const sku = `DROP-${mode}`;
  await c.gql(
    `mutation($i: CreateProductInput!) { createProduct(input: $i) { userErrors { code } } }`,
    { i: { sku, name: sku, priceAmount: 19_900, currencyCode: 'USD', initialStock: UNITS } },
    srv.keys.admin,
  );
  let dropId: string | null = null;
  const t0 = Date.now() + 1_000;
  if (mode !== 'FIRST_COME') {
    // QUEUE: the waiting room takes entries from now and opens (the fair start) once the whole crowd has been answered,
    // so every arrival of the window is shuffled, however long a busy machine takes to answer it; DRAW: entries from
    // t0, the pick at closesAt, as late. The time to sell out is counted from that start.
    const opensAt = mode === 'QUEUE' ? t0 + START_AFTER_MS : t0 - 500;
    const closesAt = mode === 'QUEUE' ? t0 + 120_000 : t0 + START_AFTER_MS;
    const r = (await c.gql(
      `mutation($i: CreateDropInput!) { createDrop(input: $i) { drop { id } userErrors { code } } }`,
      {
        i: {
          sku,
          mode,
          opensAt: new Date(opensAt).toISOString(),
          closesAt: new Date(closesAt).toISOString(),
          claimSeconds: 30,
        },
      },
      srv.keys.admin,
    )) as { data?: { createDrop: { drop: { id: string } } } };
    dropId = r.data!.createDrop.drop.id;
  }
  await sleep(t0 - Date.now());
  let soldOutAt: number | null = null;
  const watch = (async () => {
    while (soldOutAt === null && Date.now() - t0 < START_AFTER_MS + 60_000) {
      const { rows } = await db.query(`SELECT available FROM inventory WHERE sku = $1`, [sku]);
      if (rows[0].available === 0) soldOutAt = Date.now();
      else await sleep(20);
    }
  })();
  const id = dropId;
  if (id === null) await crowd(mode, (x) => c.place(x, sku));
  else
    await Promise.all([
      crowd(mode, (x) => c.enter(x, id)),
      buyAdmitted(db, c, id, sku, () => soldOutAt !== null || Date.now() - t0 > START_AFTER_MS + 60_000),
    ]);
  await watch;
  const { rows } = await db.query(
    `SELECT coalesce(sum(l.quantity) FILTER (WHERE o.customer_id LIKE '%-bot%'), 0)::int AS bots,
            coalesce(sum(l.quantity), 0)::int AS units
       FROM orders o JOIN order_lines l ON l.order_id = o.id
      WHERE l.sku = $1 AND o.status IN ('RESERVED', 'AWAITING_PAYMENT', 'CONFIRMED')`,
    [sku],
  );
  const inv = (await db.query(`SELECT available, reserved, sold FROM inventory WHERE sku = $1`, [sku])).rows[0];
  const entrants = id
    ? (
        await db.query(
          `SELECT count(*)::int AS n, count(*) FILTER (WHERE customer_id LIKE '%-bot%')::int AS bots FROM drop_entries WHERE drop_id = $1`,
          [id],
        )
      ).rows[0]
    : { n: SHOPPERS + BOTS, bots: BOTS };
  const sold = inv.reserved + inv.sold;
  return {
    mode,
    botShare: rows[0].units ? rows[0].bots / rows[0].units : 0,
    botsOfEntrants: entrants.n ? entrants.bots / entrants.n : 0,
    sold,
    oversold: Math.max(0, rows[0].units - UNITS, sold - UNITS),
    sellOutMs: soldOutAt === null ? null : soldOutAt - (mode === 'FIRST_COME' ? t0 : t0 + START_AFTER_MS),
    answers: c.tally,
  };
}

/** A bar chart of the bots' share of units by mode (plain SVG). */
function chart(rows: Row[]): string {
  const W = 520;
  const H = 300;
  const bar = 90;
  const bars = rows
    .map((r, i) => {
      const h = Math.round(r.botShare * 200);
      const x = 70 + i * 150;
      return `<rect x="${x}" y="${250 - h}" width="${bar}" height="${h}" fill="#c0392b"/>
<text x="${x + bar / 2}" y="${242 - h}" text-anchor="middle">${(r.botShare * 100).toFixed(1)}%</text>
<text x="${x + bar / 2}" y="270" text-anchor="middle">${r.mode}</text>`;
    })
    .join('\n');
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" font-family="sans-serif" font-size="13">
<text x="${W / 2}" y="24" text-anchor="middle" font-weight="bold">Share of ${UNITS} units that went to ${BOTS} bots (${SHOPPERS} shoppers)</text>
<line x1="60" x2="${W - 20}" y1="250" y2="250" stroke="#333"/>
${bars}
</svg>`;
}

async function main() {
  const bdb = await createBenchDatabase({ adminUrl: process.env.DATABASE_URL, log: (s) => console.error(s) });
  const db = new pg.Pool({ connectionString: bdb.url, max: 4 });
  let srv: ServerProcess | undefined;
  try {
    srv = await startServer({
      databaseUrl: bdb.url,
      // the crowd comes through one storefront key: per-key and per-buyer rate limits off, so the modes decide alone;
      // 4,000 requests in flight at the open wait for the pool's 20 connections longer than the 5 s default
      extraEnv: {
        SWEEP_INTERVAL_MS: '50',
        RATE_LIMIT_PER_WINDOW: '0',
        RATE_LIMIT_BUYER_PER_WINDOW: '0',
        DATABASE_CONNECT_TIMEOUT_MS: '60000',
      },
    });
    const rows: Row[] = [];
    for (const mode of MODES) {
      rows.push(await runMode(srv, db, mode));
      console.error(`bench:drops: ${mode} done, answers ${JSON.stringify(rows.at(-1)?.answers)}`);
    }
    const pct = (x: number) => `${(x * 100).toFixed(1)}%`;
    console.log(
      "| mode | bot share of units | bots among entrants | sold | oversold | time to sell out (from the sale's start) |",
    );
    console.log('|---|---:|---:|---:|---:|---:|');
    for (const r of rows)
      console.log(
        `| ${r.mode} | ${pct(r.botShare)} | ${pct(r.botsOfEntrants)} | ${r.sold} | ${r.oversold} | ${r.sellOutMs === null ? 'not sold out' : `${r.sellOutMs} ms`} |`,
      );
    await mkdir(RESULTS, { recursive: true });
    await writeFile(
      path.join(RESULTS, 'drops.json'),
      JSON.stringify({ units: UNITS, shoppers: SHOPPERS, bots: BOTS, rows }, null, 2),
    );
    await writeFile(path.join(RESULTS, 'drops.svg'), chart(rows));
    console.log(`chart: ${path.join('bench', 'results', 'drops.svg')}`);
  } finally {
    await srv?.stop();
    await db.end();
    await bdb.drop();
  }
}

await main();
