// `npm run bench:costs`: what one answer costs, the trivial query `{ __typename }` beside a sold-out placeOrder, on one
// server and one bench database, rounds alternated (COSTS_ROUNDS pairs of COSTS_ROUND_S seconds, COSTS_CLIENTS
// clients). Per answer: the server process's CPU (/proc/<pid>/stat), the CPU of every PostgreSQL process of this
// machine (backends that ended count through the postmaster's cutime, so other sessions' work counts too: an upper
// bound), this process's own CPU (the load generator), and the server's main thread's involuntary context switches
// (/proc/<pid>/status: how often the other processes took its core). For the sold-out rounds also the claim batches:
// mean size and mean time as the server sees it (lastunit_claim_batch_size, lastunit_claim_transaction_seconds from
// /metrics). docs/capacity.md reads these to say what holds the sold-out answers to their ratio. 127.0.0.1 only;
// bounded. Env: DATABASE_URL (the bench database is created there, else an embedded PostgreSQL), COSTS_SERVER_ENV
// ("NAME=value ..." for the server).
import { readFile } from 'node:fs/promises';
import { randomBytes } from 'node:crypto';
import { createBenchDatabase } from './database.js';
import { createProduct, runPlaceOrderLoad, runTrivialLoad } from './http-load.js';
import { envList, startServer } from './server.js';
import { batchesBetween, claimBatches, cpuMsOf, postgresCpuMs } from './proc.js';

async function involuntarySwitches(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8').catch(() => '');
  return Number(/^nonvoluntary_ctxt_switches:\s+(\d+)/m.exec(status)?.[1] ?? 0);
}

export type AnswerCost = {
  what: 'trivial' | 'sold-out';
  answersPerS: number;
  /** per answer, microseconds */
  serverUs: number;
  postgresUs: number;
  clientsUs: number;
  involuntarySwitches: number;
  /** sold-out rounds: the claim batches */
  batch?: { size: number; ms: number };
};

async function main() {
  const rounds = Number(process.env.COSTS_ROUNDS ?? 2);
  const roundS = Number(process.env.COSTS_ROUND_S ?? 5);
  const clients = Number(process.env.COSTS_CLIENTS ?? 64);
  const extraEnv = envList(process.env.COSTS_SERVER_ENV);
  const db = await createBenchDatabase({ adminUrl: process.env.DATABASE_URL });
  try {
    const srv = await startServer({ databaseUrl: db.url, extraEnv });
    try {
      const sku = `COSTS-${randomBytes(3).toString('hex')}`;
      await createProduct(srv, sku, 0);
      const metricsUrl = srv.endpoint.replace(/\/graphql$/, '/metrics');
      let round = 0;
      const trivial = () =>
        runTrivialLoad({
          port: srv.port,
          authorization: `Bearer ${srv.keys.storefront}`,
          connections: clients,
          durationS: roundS,
        });
      const soldOut = () =>
        runPlaceOrderLoad({ srv, sku, keyPrefix: `${sku}-${round++}`, connections: clients, durationS: roundS });
      await trivial(); // warm-up, not counted
      await soldOut();
      const results: AnswerCost[] = [];
      for (let i = 0; i < rounds; i++)
        for (const [what, load] of [
          ['trivial', trivial],
          ['sold-out', soldOut],
        ] as const) {
          const before = {
            server: await cpuMsOf(srv.pid),
            postgres: await postgresCpuMs(),
            clients: process.cpuUsage(),
            switches: await involuntarySwitches(srv.pid),
            batches: await claimBatches(metricsUrl),
          };
          const o = await load();
          if (o.errors) throw new Error(`${what}: ${o.errors} errors, e.g. ${o.errorSamples[0]}`);
          const n = o.requests;
          const c = process.cpuUsage(before.clients);
          const b = await claimBatches(metricsUrl);
          const r: AnswerCost = {
            what,
            answersPerS: Math.round(n / o.elapsedS),
            serverUs: Math.round(((await cpuMsOf(srv.pid)) - before.server) * (1000 / n)),
            postgresUs: Math.round(((await postgresCpuMs()) - before.postgres) * (1000 / n)),
            clientsUs: Math.round((c.user + c.system) / n),
            involuntarySwitches: Number((((await involuntarySwitches(srv.pid)) - before.switches) / n).toFixed(2)),
          };
          const batch = batchesBetween(before.batches, b);
          if (batch) r.batch = batch;
          results.push(r);
          console.log(
            `${what.padEnd(8)} ${String(r.answersPerS).padStart(6)} answers/s  per answer: server ${r.serverUs} us, ` +
              `PostgreSQL ${r.postgresUs} us, clients ${r.clientsUs} us; server preempted ${r.involuntarySwitches} times` +
              (r.batch ? `; claim batches of ${r.batch.size}, ${r.batch.ms} ms each as the server sees them` : ''),
          );
        }
      const mean = (what: string, f: (r: AnswerCost) => number) => {
        const xs = results.filter((r) => r.what === what).map(f);
        return xs.reduce((a, b) => a + b, 0) / xs.length;
      };
      console.log(
        `sold-out over trivial: ${(mean('sold-out', (r) => r.answersPerS) / mean('trivial', (r) => r.answersPerS)).toFixed(2)}` +
          ` (${clients} clients, ${rounds} pairs of ${roundS} s)`,
      );
    } finally {
      await srv.stop();
    }
  } finally {
    await db.drop();
  }
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
