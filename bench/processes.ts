// `npx tsx bench/processes.ts`: does a second Node process pay on this machine (the WEB_CONCURRENCY question)? One
// server with all PROC_CLIENTS (64) hot-SKU placeOrder clients, against two servers on the same database and SKU with
// half the clients each, rounds alternated (A B B A ..., PROC_ROUNDS pairs of PROC_ROUND_S seconds). Prints claims/s
// per side and two/one. DATABASE_URL: the bench database is created there (else an embedded PostgreSQL). 127.0.0.1 only.
import { randomBytes } from 'node:crypto';
import { createBenchDatabase } from './database.js';
import { createProduct, runPlaceOrderLoad } from './http-load.js';
import { startServer } from './server.js';

const rounds = Number(process.env.PROC_ROUNDS ?? 3);
const roundS = Number(process.env.PROC_ROUND_S ?? 4);
const clients = Number(process.env.PROC_CLIENTS ?? 64);

const db = await createBenchDatabase({ adminUrl: process.env.DATABASE_URL });
try {
  const [a, b] = await Promise.all([startServer({ databaseUrl: db.url }), startServer({ databaseUrl: db.url })]);
  try {
    const sku = `PROC-${randomBytes(2).toString('hex')}`;
    await createProduct(a, sku, 10_000_000);
    const total = { one: { n: 0, s: 0 }, two: { n: 0, s: 0 } };
    let r = 0;
    await runPlaceOrderLoad({ srv: a, sku, keyPrefix: 'w', connections: clients, amount: 300 });
    for (let i = 0; i < rounds; i++) {
      for (const side of i % 2 ? (['two', 'one'] as const) : (['one', 'two'] as const)) {
        const started = process.hrtime.bigint();
        const outs =
          side === 'one'
            ? [await runPlaceOrderLoad({ srv: a, sku, keyPrefix: `r${r++}`, connections: clients, durationS: roundS })]
            : await Promise.all([
                runPlaceOrderLoad({ srv: a, sku, keyPrefix: `r${r++}a`, connections: clients / 2, durationS: roundS }),
                runPlaceOrderLoad({ srv: b, sku, keyPrefix: `r${r++}b`, connections: clients / 2, durationS: roundS }),
              ]);
        const s = Number(process.hrtime.bigint() - started) / 1e9;
        const n = outs.reduce((x, o) => x + o.claimed, 0);
        for (const o of outs) if (o.errors) console.log(`${side}: ${o.errors} errors, e.g. ${o.errorSamples[0]}`);
        total[side].n += n;
        total[side].s += s;
        console.log(`round ${i + 1} ${side}: ${Math.round(n / s)}/s`);
      }
    }
    const one = total.one.n / total.one.s;
    const two = total.two.n / total.two.s;
    console.log(
      `one process: ${one.toFixed(0)}/s  two processes: ${two.toFixed(0)}/s  two/one = ${(two / one).toFixed(2)}`,
    );
  } finally {
    await Promise.all([a.stop(), b.stop()]);
  }
} finally {
  await db.drop();
}
