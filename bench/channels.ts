// `npm run bench:channels`: a simulated sale day on one stock sold three ways at once (storefront buyers plus two
// marketplaces that apply listing changes late), replayed with the same traffic three ways:
//   sync-15min      the listed quantities are sent every 15 simulated minutes (what Sellbrite, Teapplix do)
//   immediate       lastunit's pusher sends each change the moment it commits
//   immediate+buf2  the same, with a buffer of 2 units per channel
// Each way runs the real server (a child process) on a fresh database, the marketplace sandboxes over HTTP (signed
// webhooks with duplicates and delays, a listing lag, a rate limit). It prints a table, writes an SVG chart and a JSON,
// and fails (exit 1) if lastunit's stock ever went negative, a unit was made or lost, or a marketplace event had its
// effect twice (or not at all). Localhost only; bounded: a few seconds per way, stops by itself.
import { writeFile, mkdir } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createBenchDatabase } from './database.js';
import { startServer } from './server.js';
import { startMarketplaceSandbox, type MarketplaceSandbox } from '../channels/sandbox-marketplace.js';
import { createChannelPusher } from '../orders/channel-pusher.js';
import { marketplaceClient } from '../channels/marketplace-client.js';
import { createMetrics } from '../common/metrics.js';
import { createDb } from '../db/pool.js';
import { DEFAULTS } from '../kit/config-defaults.js';

export type Mode = {
  id: 'sync-15min' | 'immediate' | 'immediate+buf2';
  label: string;
  syncEveryMin?: number;
  buffer: number;
};
export const MODES: Mode[] = [
  { id: 'sync-15min', label: 'sync every 15 min', syncEveryMin: 15, buffer: 0 },
  { id: 'immediate', label: 'immediate push', buffer: 0 },
  { id: 'immediate+buf2', label: 'immediate push + buffer 2', buffer: 2 },
];

export type ChannelsBenchOptions = {
  adminUrl?: string;
  /** simulated minutes in the day, and real milliseconds per simulated minute */
  dayMinutes?: number;
  msPerMinute?: number;
  skus?: number;
  unitsPerSku?: number;
  /** buyers per unit of stock (over the day, all channels together) */
  demand?: number;
  /** the share of buyers on the storefront (the rest split between the two marketplaces) */
  storefrontShare?: number;
  /** the marketplaces' own delay before a pushed quantity shows, in simulated minutes */
  listingLagMin?: number;
  seed?: number;
  outDir?: string;
  log?: (line: string) => void;
};
export type ModeResult = {
  id: Mode['id'];
  label: string;
  oversells: number;
  unsold: number;
  takenStorefront: number;
  soldMarketplaces: number;
  marketplaceOrders: number;
  pushes: number;
  pushLagP50Min: number | null;
  pushLagP99Min: number | null;
  problems: string[];
};
export type ChannelsBenchResult = {
  ok: boolean;
  units: number;
  events: number;
  modes: ModeResult[];
  svg: string;
  json: string;
};

/** mulberry32: the same traffic for every way */
function rng(seed: number) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

type Buyer = { atMin: number; where: 'store' | 'm1' | 'm2'; sku: string };

/** The day's buyers: more around a midday peak; `storefrontShare` of them on the storefront, the rest on the two marketplaces. */
function traffic(
  o: Required<
    Pick<ChannelsBenchOptions, 'dayMinutes' | 'skus' | 'unitsPerSku' | 'demand' | 'seed' | 'storefrontShare'>
  >,
  skus: string[],
): Buyer[] {
  const r = rng(o.seed);
  const n = Math.round(o.skus * o.unitsPerSku * o.demand);
  const out: Buyer[] = [];
  for (let i = 0; i < n; i++) {
    const peak = (r() + r() + r()) / 3; // bell-ish around the middle of the day
    const w = r();
    const where = w < o.storefrontShare ? 'store' : w < o.storefrontShare + (1 - o.storefrontShare) / 2 ? 'm1' : 'm2';
    out.push({ atMin: Math.floor(peak * o.dayMinutes), where, sku: skus[Math.floor(r() * skus.length)]! });
  }
  return out.sort((a, b) => a.atMin - b.atMin);
}

/** A quantile from a Prometheus histogram's cumulative buckets (linear inside the bucket, as histogram_quantile). */
function quantile(buckets: { le: number; count: number }[], q: number): number | null {
  const total = buckets.at(-1)?.count ?? 0;
  if (total === 0) return null;
  const rank = q * total;
  let prevLe = 0;
  let prevCount = 0;
  for (const b of buckets) {
    if (b.count >= rank) {
      if (!Number.isFinite(b.le)) return prevLe;
      return prevLe + ((b.le - prevLe) * (rank - prevCount)) / Math.max(1, b.count - prevCount);
    }
    prevLe = b.le;
    prevCount = b.count;
  }
  return prevLe;
}
function lagBuckets(metricsText: string): { le: number; count: number }[] {
  const sums = new Map<number, number>();
  for (const line of metricsText.split('\n')) {
    const m = /^lastunit_channel_push_lag_seconds_bucket\{(.*)\} (\d+(?:\.\d+)?)$/.exec(line);
    if (!m) continue;
    const le = /le="([^"]+)"/.exec(m[1]!)![1]!;
    const key = le === '+Inf' ? Infinity : Number(le);
    sums.set(key, (sums.get(key) ?? 0) + Number(m[2]));
  }
  return [...sums.entries()].sort((a, b) => a[0] - b[0]).map(([le, count]) => ({ le, count }));
}

async function runMode(
  mode: Mode,
  o: Required<Omit<ChannelsBenchOptions, 'adminUrl' | 'log' | 'outDir'>> & { adminUrl?: string },
  buyers: Buyer[],
  skus: string[],
  log: (s: string) => void,
): Promise<ModeResult> {
  const problems: string[] = [];
  const bdb = await createBenchDatabase({ adminUrl: o.adminUrl });
  const markets: MarketplaceSandbox[] = [];
  let srv: Awaited<ReturnType<typeof startServer>> | undefined;
  const db = createDb({ connectionString: bdb.url, max: 4, timeouts: DEFAULTS.database.timeouts });
  const timers: NodeJS.Timeout[] = [];
  try {
    srv = await startServer({
      databaseUrl: bdb.url,
      extraEnv: {
        CHANNEL_PUSHER: mode.syncEveryMin ? 'off' : 'on',
        CHANNEL_PUSH_POLL_MS: '50',
        RATE_LIMIT_PER_WINDOW: '0',
        RATE_LIMIT_BUYER_PER_WINDOW: '0',
        SWEEP_INTERVAL_MS: '1000',
      },
    });
    const s = srv;
    const gql = async (key: string, query: string, variables: Record<string, unknown>) => {
      const res = await fetch(s.endpoint, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
        body: JSON.stringify({ query, variables }),
      });
      const body = (await res.json()) as any;
      if (res.status !== 200 || body.errors)
        throw new Error(`GraphQL fault ${res.status}: ${JSON.stringify(body).slice(0, 300)}`);
      return body.data;
    };
    for (const sku of skus)
      await gql(
        s.keys.admin,
        `mutation($i: CreateProductInput!) { createProduct(input: $i) { userErrors { code } } }`,
        { i: { sku, name: sku, priceAmount: 1000, currencyCode: 'USD', initialStock: o.unitsPerSku } },
      );
    const lagMs = o.listingLagMin * o.msPerMinute;
    for (const id of ['m1', 'm2']) {
      const m = await startMarketplaceSandbox({
        lagMs,
        maxRequestsPerSecond: 50,
        duplicateRate: 0.2,
        maxDelayMs: 2 * o.msPerMinute,
        random: rng(o.seed + id.length + Number(id[1])),
      });
      markets.push(m);
      const d = await gql(
        s.keys.admin,
        `mutation($i: CreateChannelInput!) { createChannel(input: $i) { webhookSecret userErrors { code message } } }`,
        {
          i: {
            id,
            name: `Marketplace ${id}`,
            kind: 'SANDBOX',
            endpoint: m.url,
            buffer: mode.buffer,
            maxPushesPerSecond: 50,
          },
        },
      );
      if (d.createChannel.userErrors.length) throw new Error(JSON.stringify(d.createChannel.userErrors));
      m.configure({ webhookUrl: `${s.url}/webhooks/channels/${id}`, webhookSecret: d.createChannel.webhookSecret });
    }
    const [m1, m2] = markets as [MarketplaceSandbox, MarketplaceSandbox];
    // the sync way: lastunit's own pusher, run only every N simulated minutes (the host's is off)
    const syncMetrics = createMetrics();
    const syncer = createChannelPusher({
      db,
      metrics: syncMetrics,
      channelListMs: 0,
      clientFor: (c) => marketplaceClient(c, { timeoutMs: 5000 }),
    });
    const sync = async () => {
      await syncer.pushOnce();
      await syncer.cancelOnce();
    };
    // both ways start listed: the first sync / the first pushes
    if (mode.syncEveryMin) await sync();
    const deadline = Date.now() + 10_000;
    while (skus.some((sku) => m1.listed(sku) === 0 || m2.listed(sku) === 0) && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, lagMs + 20));

    // push lag of the day only: the histogram as it stands now is subtracted at the end (the opening listings are not the day)
    const metricsText = async () =>
      mode.syncEveryMin ? await syncMetrics.registry.metrics() : await (await fetch(`${s.url}/metrics`)).text();
    const before = lagBuckets(await metricsText());
    const start = Date.now();
    let syncing: Promise<unknown> = Promise.resolve();
    if (mode.syncEveryMin) {
      timers.push(
        setInterval(() => {
          syncing = syncing.then(sync).catch((err) => problems.push(`sync failed: ${String(err)}`));
        }, mode.syncEveryMin * o.msPerMinute),
      );
    }
    let taken = 0;
    let seq = 0;
    const inflight: Promise<unknown>[] = [];
    for (const b of buyers) {
      const wait = start + b.atMin * o.msPerMinute - Date.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      if (b.where === 'store') {
        const n = ++seq;
        inflight.push(
          gql(
            s.keys.storefront,
            `mutation($i: PlaceOrderInput!) { placeOrder(input: $i) { order { status } userErrors { code } } }`,
            {
              i: { idempotencyKey: `bench-${n}`, customerId: `shopper-${n}`, lines: [{ sku: b.sku, quantity: 1 }] },
            },
          ).then((d) => {
            if (d.placeOrder.order?.status === 'RESERVED') taken++;
          }),
        );
      } else (b.where === 'm1' ? m1 : m2).buy(b.sku, 1);
    }
    await Promise.all(inflight);
    await Promise.all(markets.map((m) => m.idle()));
    for (const t of timers) clearInterval(t);
    await syncing;
    if (mode.syncEveryMin) await sync();
    // the host's pusher finishes its cancellations by itself (immediate ways)
    const until = Date.now() + 5_000;
    for (;;) {
      const { rows } = await db.query(
        `SELECT count(*)::int AS n FROM channel_incidents WHERE cancel_state = 'PENDING'`,
      );
      if (rows[0].n === 0 || Date.now() > until) break;
      await new Promise((r) => setTimeout(r, 50));
    }

    // the account: never negative (I1), nothing made or lost (I2), every marketplace event applied exactly once (I8)
    const inv = (await db.query(`SELECT sku, available, reserved, sold FROM inventory ORDER BY sku`)).rows as {
      sku: string;
      available: number;
      reserved: number;
      sold: number;
    }[];
    for (const r of inv) {
      if (r.available < 0 || r.reserved < 0 || r.sold < 0)
        problems.push(`${r.sku}: negative stock ${JSON.stringify(r)}`);
      if (r.available + r.reserved + r.sold !== o.unitsPerSku)
        problems.push(`${r.sku}: ${r.available + r.reserved + r.sold} units, not ${o.unitsPerSku}`);
    }
    const created = m1.stats().orders + m2.stats().orders;
    const orders = (
      await db.query(
        `SELECT count(*)::int AS n, count(DISTINCT (channel_id, external_order_id))::int AS d FROM orders WHERE channel_id IS NOT NULL`,
      )
    ).rows[0];
    const events = (await db.query(`SELECT count(*)::int AS n FROM processed_events WHERE source LIKE 'channel:%'`))
      .rows[0].n;
    if (orders.n !== created || orders.d !== created)
      problems.push(`marketplace orders: ${created} created, ${orders.n} recorded (${orders.d} distinct)`);
    if (events !== created) problems.push(`marketplace events: ${created} sent, ${events} applied`);
    const confirmed = (
      await db.query(
        `SELECT coalesce(sum(l.quantity), 0)::int AS u FROM orders o JOIN order_lines l ON l.order_id = o.id WHERE o.channel_id IS NOT NULL AND o.status = 'CONFIRMED'`,
      )
    ).rows[0].u;
    const soldCol = inv.reduce((n, r) => n + r.sold, 0);
    if (confirmed !== soldCol)
      problems.push(`sold column ${soldCol} != confirmed marketplace units ${confirmed} (an event applied twice?)`);
    const oversells = (await db.query(`SELECT count(*)::int AS n FROM channel_incidents`)).rows[0].n;
    const cancelAsks = m1.stats().cancelled + m2.stats().cancelled;
    if (cancelAsks !== oversells)
      problems.push(`${oversells} oversells, ${cancelAsks} cancellations at the marketplaces`);

    const buckets = lagBuckets(await metricsText()).map((b) => ({
      le: b.le,
      count: b.count - (before.find((x) => x.le === b.le)?.count ?? 0),
    }));
    const toMin = (sec: number | null) =>
      sec === null ? null : Math.round(((sec * 1000) / o.msPerMinute) * 100) / 100;
    const res: ModeResult = {
      id: mode.id,
      label: mode.label,
      oversells,
      unsold: inv.reduce((n, r) => n + r.available, 0),
      takenStorefront: taken,
      soldMarketplaces: confirmed,
      marketplaceOrders: created,
      pushes: m1.stats().pushes + m2.stats().pushes,
      pushLagP50Min: toMin(quantile(buckets, 0.5)),
      pushLagP99Min: toMin(quantile(buckets, 0.99)),
      problems,
    };
    log(`${mode.label}: ${JSON.stringify({ ...res, problems: problems.length })}`);
    return res;
  } finally {
    for (const t of timers) clearInterval(t);
    for (const m of markets) await m.close();
    await srv?.stop();
    await db.end();
    await bdb.drop();
  }
}

function chart(results: ModeResult[], units: number): string {
  const W = 720,
    H = 320,
    left = 60,
    top = 40,
    ph = 200;
  const groups: { title: string; value: (r: ModeResult) => number; max: number; unit: string }[] = [
    {
      title: 'oversell incidents',
      value: (r) => r.oversells,
      max: Math.max(1, ...results.map((r) => r.oversells)),
      unit: '',
    },
    { title: 'units left unsold', value: (r) => r.unsold, max: Math.max(1, ...results.map((r) => r.unsold)), unit: '' },
    {
      title: 'push lag p99 (sim. min)',
      value: (r) => r.pushLagP99Min ?? 0,
      max: Math.max(1, ...results.map((r) => r.pushLagP99Min ?? 0)),
      unit: '',
    },
  ];
  const colors = ['#b0413e', '#3e7cb1', '#4a9d5b'];
  const gw = (W - left - 20) / groups.length;
  let svg = `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" font-family="sans-serif" font-size="12">`;
  svg += `<text x="${W / 2}" y="20" text-anchor="middle" font-size="14">lastunit bench:channels: one sale day (${units} units), three ways</text>`;
  groups.forEach((g, gi) => {
    const x0 = left + gi * gw;
    svg += `<text x="${x0 + gw / 2}" y="${top + ph + 40}" text-anchor="middle">${g.title}</text>`;
    results.forEach((r, ri) => {
      const v = g.value(r);
      const h = (v / g.max) * ph;
      const bw = gw / (results.length + 1);
      const x = x0 + bw * (ri + 0.5);
      svg += `<rect x="${x}" y="${top + ph - h}" width="${bw * 0.8}" height="${h}" fill="${colors[ri]}"/>`;
      svg += `<text x="${x + bw * 0.4}" y="${top + ph - h - 4}" text-anchor="middle">${v}</text>`;
    });
    svg += `<line x1="${x0}" y1="${top + ph}" x2="${x0 + gw - 10}" y2="${top + ph}" stroke="#333"/>`;
  });
  results.forEach((r, ri) => {
    svg += `<rect x="${left + ri * 200}" y="${H - 22}" width="12" height="12" fill="${colors[ri]}"/><text x="${left + ri * 200 + 16}" y="${H - 12}">${r.label}</text>`;
  });
  return `${svg}</svg>\n`;
}

/** Runs the three ways on the same traffic; see the file header. */
export async function runChannelsBench(opts: ChannelsBenchOptions = {}): Promise<ChannelsBenchResult> {
  const o = {
    adminUrl: opts.adminUrl,
    dayMinutes: opts.dayMinutes ?? 480,
    msPerMinute: opts.msPerMinute ?? 25,
    skus: opts.skus ?? 4,
    unitsPerSku: opts.unitsPerSku ?? 15,
    demand: opts.demand ?? 1.15,
    storefrontShare: opts.storefrontShare ?? 0.2,
    listingLagMin: opts.listingLagMin ?? 3,
    seed: opts.seed ?? 11,
  };
  const log = opts.log ?? ((l: string) => console.log(l));
  const skus = Array.from({ length: o.skus }, (_, i) => `DAY-${i + 1}`);
  const buyers = traffic(o, skus);
  log(
    `sale day: ${o.dayMinutes} simulated minutes at ${o.msPerMinute} ms each, ${skus.length} SKUs x ${o.unitsPerSku} units, ${buyers.length} buyers (${['store', 'm1', 'm2'].map((w) => `${w} ${buyers.filter((b) => b.where === w).length}`).join(', ')}), marketplace listing lag ${o.listingLagMin} min`,
  );
  const modes: ModeResult[] = [];
  for (const m of MODES) modes.push(await runMode(m, o, buyers, skus, log));
  const outDir = opts.outDir ?? path.join(path.dirname(fileURLToPath(import.meta.url)), 'results');
  await mkdir(outDir, { recursive: true });
  const svg = path.join(outDir, 'channels.svg');
  const json = path.join(outDir, 'channels.json');
  const units = o.skus * o.unitsPerSku;
  await writeFile(svg, chart(modes, units));
  await writeFile(
    json,
    JSON.stringify({ options: { ...o, adminUrl: undefined }, buyers: buyers.length, modes }, null, 2),
  );
  const pad = (s: string | number, n: number) => String(s).padStart(n);
  log('');
  log(
    `| way                        | oversell incidents | units left unsold | storefront holds | marketplace units sold | marketplace orders | pushes | push lag p50 (sim min) | p99 (sim min) |`,
  );
  log(
    `|----------------------------|-------------------:|------------------:|-----------------:|-----------------------:|-------------------:|-------:|-----------------------:|--------------:|`,
  );
  for (const r of modes)
    log(
      `| ${r.label.padEnd(26)} | ${pad(r.oversells, 18)} | ${pad(r.unsold, 17)} | ${pad(r.takenStorefront, 16)} | ${pad(r.soldMarketplaces, 22)} | ${pad(r.marketplaceOrders, 18)} | ${pad(r.pushes, 6)} | ${pad(r.pushLagP50Min ?? '-', 22)} | ${pad(r.pushLagP99Min ?? '-', 13)} |`,
    );
  log(`\nchart: ${svg}\njson: ${json}`);
  const problems = modes.flatMap((m) => m.problems.map((p) => `${m.label}: ${p}`));
  for (const p of problems) log(`PROBLEM ${p}`);
  return { ok: problems.length === 0, units, events: buyers.length, modes, svg, json };
}

if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) {
  runChannelsBench({ adminUrl: process.env.DATABASE_URL || undefined }).then(
    (r) => process.exit(r.ok ? 0 : 1),
    (err) => {
      console.error(err);
      process.exit(1);
    },
  );
}
