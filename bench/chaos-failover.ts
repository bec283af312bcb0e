// `npm run chaos:failover`: the failover drill of kit/failover.ts, once with a synchronous standby and once with
// asynchronous replication, each printed (docs/deploy.md explains the difference). 127.0.0.1 only, bounded.
//   FAILOVER_BUYERS (400) FAILOVER_UNITS (150) FAILOVER_CONCURRENCY (48) FAILOVER_PROCESSES (1, WEB_CONCURRENCY)
//   FAILOVER_REPLICATION_DELAY_MS (100: the asynchronous standby's WAL arrives this late), FAILOVER_ONLY (sync|async),
//   FAILOVER_SERVER_LOG (a file the host's output is appended to)
import { appendFileSync } from 'node:fs';
import { formatDrill, runFailoverDrill } from '../kit/failover.js';

const num = (v: string | undefined, d: number) => (v ? Number(v) : d);
const only = process.env.FAILOVER_ONLY;
const common = {
  buyers: num(process.env.FAILOVER_BUYERS, 400),
  units: num(process.env.FAILOVER_UNITS, 150),
  concurrency: num(process.env.FAILOVER_CONCURRENCY, 48),
  processes: num(process.env.FAILOVER_PROCESSES, 1),
  log: (l: string) => console.error(`drill: ${l}`),
  serverOutput: process.env.FAILOVER_SERVER_LOG
    ? (text: string) => appendFileSync(process.env.FAILOVER_SERVER_LOG!, text)
    : undefined,
};
let failed = false;
const safety = setTimeout(() => {
  console.error('drill: safety timeout (10 minutes)');
  process.exit(1);
}, 600_000);
for (const synchronous of [true, false]) {
  if (only && only !== (synchronous ? 'sync' : 'async')) continue;
  const r = await runFailoverDrill({
    ...common,
    synchronous,
    replicationDelayMs: synchronous ? 0 : num(process.env.FAILOVER_REPLICATION_DELAY_MS, 100),
  });
  console.log(formatDrill(r));
  if (synchronous && (r.acknowledgedLost || r.oversold || r.duplicates || r.ledger.length || r.outboxLeft))
    failed = true;
}
clearTimeout(safety);
process.exit(failed ? 1 : 0);
