// `npm run bench:profile`: where the server's CPU goes under the hot-SKU load. Starts the real server with
// `node --cpu-prof`, sends placeOrder for a hot SKU (PROFILE_CLIENTS 64, PROFILE_DURATION_S 10) or, with
// PROFILE_SOLD_OUT=1, for a sold-out one, or with PROFILE_QUERY=trivial `{ __typename }`, stops it, and prints the top frames by self time and the time per package.
// PROFILE_KEEP=<prefix>: keep the .cpuprofile as <prefix>-<name>. DATABASE_URL: the bench database is created there (else an embedded PostgreSQL). 127.0.0.1 only; bounded.
import { copyFile, mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { createBenchDatabase } from './database.js';
import { createProduct, runPlaceOrderLoad, runTrivialLoad } from './http-load.js';
import { startServer } from './server.js';

type Node = { id: number; callFrame: { functionName: string; url: string; lineNumber: number }; hitCount?: number };
type Profile = { nodes: Node[]; samples: number[]; timeDeltas: number[]; startTime: number; endTime: number };

/** Self time per frame and per package of a .cpuprofile. */
export function summarize(p: Profile, top = 20) {
  const total = p.samples.length;
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const frames = new Map<string, number>();
  const packages = new Map<string, number>();
  for (const id of p.samples) {
    const n = byId.get(id)!;
    const url = n.callFrame.url.replace(/^file:\/\//, '');
    const nm = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
    const where = nm ? nm[1]! : url.startsWith('node:') ? url : url ? path.relative(process.cwd(), url) : '';
    const name = `${n.callFrame.functionName || '(anonymous)'} ${where}${url ? `:${n.callFrame.lineNumber + 1}` : ''}`;
    frames.set(name, (frames.get(name) ?? 0) + 1);
    const pkg = nm
      ? nm[1]!
      : url.startsWith('node:')
        ? 'node: (core js)'
        : url
          ? 'lastunit'
          : n.callFrame.functionName.startsWith('(')
            ? n.callFrame.functionName
            : '(native)';
    packages.set(pkg, (packages.get(pkg) ?? 0) + 1);
  }
  const pct = (n: number) => `${((100 * n) / total).toFixed(1).padStart(5)}%`;
  const sorted = (m: Map<string, number>) => [...m].sort((a, b) => b[1] - a[1]);
  return [
    `samples ${total}, ${((p.endTime - p.startTime) / 1e6).toFixed(1)} s`,
    'top frames by self time:',
    ...sorted(frames)
      .slice(0, top)
      .map(([k, v]) => `  ${pct(v)}  ${k}`),
    'self time by package:',
    ...sorted(packages)
      .slice(0, 12)
      .map(([k, v]) => `  ${pct(v)}  ${k}`),
  ].join('\n');
}

async function main() {
  const clients = Number(process.env.PROFILE_CLIENTS ?? 64);
  const durationS = Number(process.env.PROFILE_DURATION_S ?? 10);
  const soldOut = process.env.PROFILE_SOLD_OUT === '1';
  const trivial = process.env.PROFILE_QUERY === 'trivial';
  const dir = await mkdtemp(path.join(os.tmpdir(), 'lastunit-prof-'));
  const db = await createBenchDatabase({ adminUrl: process.env.DATABASE_URL });
  try {
    const srv = await startServer({ databaseUrl: db.url, nodeArgs: ['--cpu-prof', `--cpu-prof-dir=${dir}`] });
    try {
      if (trivial) {
        const load = (durationS: number) =>
          runTrivialLoad({
            port: srv.port,
            authorization: `Bearer ${srv.keys.storefront}`,
            connections: clients,
            durationS,
          });
        await load(2);
        const o = await load(durationS);
        console.log(
          `trivial { __typename }, ${clients} clients, ${durationS} s: ${o.claimed} answered, ${o.errors} errors, ${(o.requests / o.elapsedS).toFixed(0)} req/s`,
        );
      }
      const sku = `PROF-${randomBytes(3).toString('hex')}`;
      if (!trivial) {
        await createProduct(srv, sku, soldOut ? 0 : 10_000_000);
        // warm-up, then the measured load
        await runPlaceOrderLoad({ srv, sku, keyPrefix: `${sku}-w`, connections: clients, amount: 500 });
        const o = await runPlaceOrderLoad({ srv, sku, keyPrefix: `${sku}-m`, connections: clients, durationS });
        console.log(
          `${soldOut ? 'sold-out' : 'hot SKU'} placeOrder, ${clients} clients, ${durationS} s: ${o.claimed} claimed, ${o.refused} refused, ${o.errors} errors, ${(o.requests / o.elapsedS).toFixed(0)} req/s`,
        );
      }
    } finally {
      await srv.stop('SIGTERM', 15_000);
    }
    const files = (await readdir(dir)).filter((f) => f.endsWith('.cpuprofile'));
    for (const f of files) console.log(summarize(JSON.parse(await readFile(path.join(dir, f), 'utf8')) as Profile));
    if (process.env.PROFILE_KEEP)
      for (const f of files) await copyFile(path.join(dir, f), `${process.env.PROFILE_KEEP}-${f}`);
  } finally {
    await db.drop();
    await rm(dir, { recursive: true, force: true });
  }
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
