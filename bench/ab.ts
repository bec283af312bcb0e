// `npx tsx bench/ab.ts`: two server processes differing only in their environment (AB_A and AB_B, e.g.
// "CLAIM_BATCHES_IN_FLIGHT=1" and "CLAIM_BATCHES_IN_FLIGHT=2") on one bench database, the hot-SKU placeOrder load
// alternated A B B A ... (AB_ROUNDS pairs of AB_ROUND_S seconds, AB_CLIENTS clients), so drifting background load
// weighs on both alike. AB_BUCKETS=n: both SKUs split into n stock buckets; AB_SOLD_OUT=1: both sold out. Prints claims/s per side and B/A. For measuring a lever; not part of `npm run bench`.
import { randomBytes } from 'node:crypto';
import { createBenchDatabase } from './database.js';
import { createProduct, runPlaceOrderLoad } from './http-load.js';
import { envList, startServer } from './server.js';
import { setBuckets } from './buckets.js';

const A = envList(process.env.AB_A);
const B = envList(process.env.AB_B);
const rounds = Number(process.env.AB_ROUNDS ?? 3);
const roundS = Number(process.env.AB_ROUND_S ?? 4);
const clients = Number(process.env.AB_CLIENTS ?? 64);
const soldOut = process.env.AB_SOLD_OUT === '1';
const stockBuckets = Number(process.env.AB_BUCKETS ?? 1);

const db = await createBenchDatabase({ adminUrl: process.env.DATABASE_URL });
try {
  const [a, b] = await Promise.all([
    startServer({ databaseUrl: db.url, extraEnv: A }),
    startServer({ databaseUrl: db.url, extraEnv: B }),
  ]);
  try {
    const total = { a: { n: 0, s: 0 }, b: { n: 0, s: 0 } };
    const sku = { a: `AB-A-${randomBytes(2).toString('hex')}`, b: `AB-B-${randomBytes(2).toString('hex')}` };
    await createProduct(a, sku.a, soldOut ? 0 : 10_000_000);
    await createProduct(b, sku.b, soldOut ? 0 : 10_000_000);
    if (stockBuckets > 1) await Promise.all([setBuckets(a, sku.a, stockBuckets), setBuckets(b, sku.b, stockBuckets)]);
    let r = 0;
    for (const [side, srv] of [
      ['a', a],
      ['b', b],
    ] as const)
      await runPlaceOrderLoad({ srv, sku: sku[side], keyPrefix: `w${side}`, connections: clients, amount: 300 });
    for (let i = 0; i < rounds; i++) {
      for (const [side, srv] of (i % 2
        ? [
            ['b', b],
            ['a', a],
          ]
        : [
            ['a', a],
            ['b', b],
          ]) as ['a' | 'b', typeof a][]) {
        const o = await runPlaceOrderLoad({
          srv,
          sku: sku[side],
          keyPrefix: `r${r++}${side}`,
          connections: clients,
          durationS: roundS,
        });
        if (o.errors) console.log(`${side}: ${o.errors} errors, e.g. ${o.errorSamples[0]}`);
        total[side].n += soldOut ? o.refused : o.claimed;
        total[side].s += o.elapsedS;
        console.log(`round ${i + 1} ${side}: ${Math.round((soldOut ? o.refused : o.claimed) / o.elapsedS)}/s`);
      }
    }
    const ra = total.a.n / total.a.s;
    const rb = total.b.n / total.b.s;
    console.log(
      `A (${process.env.AB_A}): ${ra.toFixed(0)}/s  B (${process.env.AB_B}): ${rb.toFixed(0)}/s  B/A = ${(rb / ra).toFixed(2)}`,
    );
  } finally {
    await Promise.all([a.stop(), b.stop()]);
  }
} finally {
  await db.drop();
}
