// `npx tsx bench/ab-serial.ts`: a lever measured one server at a time. Two environments (AB_A, AB_B, e.g. "" and
// "WEBHOOK_DELIVERY=off") on one bench database; each round starts a server with one of them, warms it, runs the
// hot-SKU placeOrder load (AB_ROUND_S seconds, AB_CLIENTS clients) and stops it, alternating A B, B A... for
// AB_ROUNDS pairs. bench/ab.ts runs both servers at once, so a background loop of the idle one (relay, sequencer,
// sweeper) works for the loaded one's rows and its cost lands on the wrong side; here only the measured server runs.
// AB_BUCKETS=n: the SKU in n stock buckets; AB_SOLD_OUT=1: a sold-out SKU (answers/s). Per round: claims/s, the
// server's and every PostgreSQL process's CPU per claim, the machine's busy share, the claim batches. Not part of
// `npm run bench`. DATABASE_URL: the bench database is created there (else an embedded PostgreSQL). 127.0.0.1 only.
import { randomBytes } from 'node:crypto';
import { createBenchDatabase } from './database.js';
import { createProduct, runPlaceOrderLoad } from './http-load.js';
import { envList, startServer } from './server.js';
import { setBuckets } from './buckets.js';
import { batchesBetween, boxCpuMs, busyShare, claimBatches, cpuMsOf, postgresCpuMs } from './proc.js';

const sides = { A: envList(process.env.AB_A), B: envList(process.env.AB_B) };
const rounds = Number(process.env.AB_ROUNDS ?? 3);
const roundS = Number(process.env.AB_ROUND_S ?? 5);
const clients = Number(process.env.AB_CLIENTS ?? 64);
const buckets = Number(process.env.AB_BUCKETS ?? 1);
const soldOut = process.env.AB_SOLD_OUT === '1';

const db = await createBenchDatabase({ adminUrl: process.env.DATABASE_URL });
const rates: Record<'A' | 'B', number[]> = { A: [], B: [] };
try {
  for (let i = 0; i < rounds; i++)
    for (const side of i % 2 ? (['B', 'A'] as const) : (['A', 'B'] as const)) {
      const srv = await startServer({ databaseUrl: db.url, extraEnv: sides[side] });
      try {
        const sku = `ABS-${side}-${randomBytes(3).toString('hex')}`;
        await createProduct(srv, sku, soldOut ? 0 : 10_000_000);
        if (buckets > 1) await setBuckets(srv, sku, buckets);
        await runPlaceOrderLoad({ srv, sku, keyPrefix: `w${sku}`, connections: clients, amount: 600 });
        const metrics = srv.endpoint.replace(/\/graphql$/, '/metrics');
        const mark = async () => ({
          server: await cpuMsOf(srv.pid),
          postgres: await postgresCpuMs(),
          box: await boxCpuMs(),
          batches: await claimBatches(metrics),
        });
        const a = await mark();
        const o = await runPlaceOrderLoad({ srv, sku, keyPrefix: `m${sku}`, connections: clients, durationS: roundS });
        const b = await mark();
        if (o.errors) throw new Error(`${side}: ${o.errors} errors, e.g. ${o.errorSamples[0]}`);
        const n = soldOut ? o.claimed + o.refused : o.claimed;
        rates[side].push(n / o.elapsedS);
        const per = (x: number) => (n > 0 ? (x / n).toFixed(3) : '-');
        console.log(
          `${side} ${Math.round(n / o.elapsedS)} ${soldOut ? 'answers' : 'claims'}/s  per ${soldOut ? 'answer' : 'claim'}: ` +
            `server ${per(b.server - a.server)} ms, PostgreSQL (every process) ${per(b.postgres - a.postgres)} ms; ` +
            `machine ${Math.round((busyShare(a.box, b.box) ?? 0) * 100)}% busy; ` +
            `batches ${JSON.stringify(batchesBetween(a.batches, b.batches))}`,
        );
      } finally {
        await srv.stop();
      }
    }
  const mean = (x: number[]) => x.reduce((p, q) => p + q, 0) / x.length;
  console.log(
    `A ${Math.round(mean(rates.A))}/s  B ${Math.round(mean(rates.B))}/s  B/A ${(mean(rates.B) / mean(rates.A)).toFixed(3)}` +
      ` (${rounds} pairs of ${roundS} s, ${clients} clients${buckets > 1 ? `, ${buckets} buckets` : ''}${soldOut ? ', sold out' : ''})`,
  );
} finally {
  await db.drop();
}
process.exit(0);
