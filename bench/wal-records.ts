// `npm run bench:wal`: what the WAL of one claim and of one sold-out answer is made of. One server, one bench database;
// for the hot SKU and then for a sold-out one: a warm-up, a CHECKPOINT, WAL_ROUND_S seconds of placeOrder from
// WAL_CLIENTS clients, then PostgreSQL's own record statistics over that stretch of WAL (pg_walinspect's
// pg_get_wal_stats, PostgreSQL 15+: created in the bench database, which is dropped afterwards), per answer: records
// and bytes by record type, full-page images apart. The WAL is the whole server's: other databases writing meanwhile
// count too. WAL_SERVER_ENV ("NAME=value ...") for the server, e.g. WEBHOOK_DELIVERY=off to leave the event log's
// sequencer out (docs/capacity.md). Env: DATABASE_URL (else an embedded PostgreSQL). 127.0.0.1 only; bounded.
import pg from 'pg';
import { randomBytes } from 'node:crypto';
import { createBenchDatabase } from './database.js';
import { createProduct, runPlaceOrderLoad } from './http-load.js';
import { envList, startServer } from './server.js';

type Stat = { t: string; count: string; record_size: string; fpi_size: string };

async function main() {
  const roundS = Number(process.env.WAL_ROUND_S ?? 5);
  const clients = Number(process.env.WAL_CLIENTS ?? 64);
  const extraEnv = envList(process.env.WAL_SERVER_ENV);
  const db = await createBenchDatabase({ adminUrl: process.env.DATABASE_URL });
  const client = new pg.Client({ connectionString: db.url });
  try {
    await client.connect();
    try {
      await client.query('CREATE EXTENSION IF NOT EXISTS pg_walinspect');
    } catch (err) {
      throw new Error(`pg_walinspect is not available on this server (PostgreSQL 15+ with its contrib): ${err}`);
    }
    // The measured stretches' WAL is kept until it is read: on a busy server a checkpoint (its own, or another
    // session's) can remove or recycle their segments first ("requested WAL segment ... has already been removed",
    // seen once in .ci/run). A temporary physical slot reserving the WAL from now on goes with this session.
    try {
      await client.query('SELECT pg_create_physical_replication_slot($1, true, true)', [
        `lastunit_wal_${randomBytes(4).toString('hex')}`,
      ]);
    } catch (err) {
      console.log(`(no replication slot to keep the WAL until it is read: ${err}; a checkpoint may remove it first)`);
    }
    const srv = await startServer({ databaseUrl: db.url, extraEnv });
    try {
      const tag = randomBytes(3).toString('hex');
      const rounds = [
        { what: 'hot SKU claim', sku: `WAL-HOT-${tag}`, stock: 10_000_000 },
        { what: 'sold-out answer', sku: `WAL-OUT-${tag}`, stock: 0 },
      ];
      for (const r of rounds) await createProduct(srv, r.sku, r.stock);
      for (const r of rounds) {
        await runPlaceOrderLoad({ srv, sku: r.sku, keyPrefix: `${r.sku}-w`, connections: clients, durationS: 2 });
        await client.query('CHECKPOINT'); // the stretch starts after a checkpoint: its full-page images count
        const from = (await client.query('SELECT pg_current_wal_flush_lsn() AS l')).rows[0].l as string;
        const o = await runPlaceOrderLoad({
          srv,
          sku: r.sku,
          keyPrefix: `${r.sku}-m`,
          connections: clients,
          durationS: roundS,
        });
        await new Promise((done) => setTimeout(done, 500)); // the last commits' WAL flushed
        const to = (await client.query('SELECT pg_current_wal_flush_lsn() AS l')).rows[0].l as string;
        const n = o.requests;
        const bytes = Number((await client.query('SELECT pg_wal_lsn_diff($2, $1) AS d', [from, to])).rows[0].d);
        const { rows } = await client.query<Stat>(
          `SELECT "resource_manager/record_type" AS t, count, record_size, fpi_size
             FROM pg_get_wal_stats($1, $2, true) WHERE count > 0 ORDER BY combined_size DESC LIMIT 12`,
          [from, to],
        );
        console.log(`${r.what}: ${n} answers in ${roundS} s, ${(bytes / n).toFixed(0)} B of WAL per answer`);
        for (const s of rows)
          console.log(
            `  ${s.t.padEnd(24)} ${(Number(s.count) / n).toFixed(2).padStart(6)} records ${(Number(s.record_size) / n).toFixed(0).padStart(6)} B` +
              `  full-page images ${(Number(s.fpi_size) / n).toFixed(0).padStart(4)} B  per answer`,
          );
      }
    } finally {
      await srv.stop();
    }
  } finally {
    await client.end().catch(() => {});
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
