// `npx tsx bench/cheap.ts`: the cheap-answers part of `npm run bench` alone, for measuring a lever on the request path:
// our trivial `{ __typename }`, a bare graphql-yoga on node:http (bench/bare-yoga.ts) and sold-out placeOrder answers,
// rounds alternated (T B S S B T, CHEAP_ROUNDS times, CHEAP_ROUND_S seconds each, CHEAP_CLIENTS clients) so drifting
// background load weighs on all alike. CHEAP_ENV: extra environment for our server ("K=V K2=V2"). Prints the two
// ratios. DATABASE_URL: the bench database is created there (else an embedded PostgreSQL). 127.0.0.1 only; bounded.
import { randomBytes } from 'node:crypto';
import { createBenchDatabase } from './database.js';
import { classifyTrivial, createProduct, runHttpLoad, runPlaceOrderLoad, TRIVIAL_BODY } from './http-load.js';
import { mergeOutcome, newOutcome } from './load-outcome.js';
import { envList, startServer } from './server.js';
import { spawnServer } from '../kit/server.js';

const rounds = Number(process.env.CHEAP_ROUNDS ?? 2);
const roundS = Number(process.env.CHEAP_ROUND_S ?? 3);
const clients = Number(process.env.CHEAP_CLIENTS ?? 64);

const db = await createBenchDatabase({ adminUrl: process.env.DATABASE_URL });
try {
  const srv = await startServer({ databaseUrl: db.url, extraEnv: envList(process.env.CHEAP_ENV) });
  const bare = await spawnServer({
    script: 'bench/bare-yoga.ts',
    ready: /bare yoga listening on http:\/\/127\.0\.0\.1:(?<port>\d+)\/graphql/,
  });
  try {
    const sku = `CHEAP-${randomBytes(3).toString('hex')}`;
    await createProduct(srv, sku, 0);
    const total = { trivial: newOutcome(), bare: newOutcome(), soldOut: newOutcome() };
    let r = 0;
    for (let i = 0; i < rounds; i++) {
      for (const which of ['trivial', 'bare', 'soldOut', 'soldOut', 'bare', 'trivial'] as const) {
        const o =
          which === 'soldOut'
            ? await runPlaceOrderLoad({ srv, sku, keyPrefix: `r${r++}`, connections: clients, durationS: roundS })
            : await runHttpLoad({
                port: which === 'bare' ? bare.port : srv.port,
                authorization: which === 'bare' ? undefined : `Bearer ${srv.keys.storefront}`,
                nextBody: () => TRIVIAL_BODY,
                classify: classifyTrivial,
                connections: clients,
                durationS: roundS,
              });
        if (o.errors) console.log(`${which}: ${o.errors} errors, e.g. ${o.errorSamples[0]}`);
        if (which === 'soldOut' && o.claimed) console.log(`sold-out: ${o.claimed} claims of a SKU with no stock`);
        mergeOutcome(total[which], o);
        console.log(
          `round ${i + 1} ${which}: ${Math.round((which === 'soldOut' ? o.refused : o.claimed) / o.elapsedS)}/s`,
        );
      }
    }
    const rate = (o: typeof total.trivial, n: number) => n / o.elapsedS;
    const t = rate(total.trivial, total.trivial.claimed);
    const b = rate(total.bare, total.bare.claimed);
    const s = rate(total.soldOut, total.soldOut.refused);
    console.log(
      `trivial ${t.toFixed(0)}/s  bare yoga ${b.toFixed(0)}/s  sold-out ${s.toFixed(0)}/s  trivial/bare = ${(t / b).toFixed(2)}  sold-out/trivial = ${(s / t).toFixed(2)}`,
    );
  } finally {
    await Promise.all([srv.stop(), bare.stop()]);
  }
} finally {
  await db.drop();
}
