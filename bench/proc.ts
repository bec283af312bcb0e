// What the benchmarks read of this machine and of the server while a round runs: a process's CPU and the whole box's
// (Linux /proc, counted in USER_HZ ticks of 10 ms), and the server's claim batches from its /metrics.
import { readdir, readFile } from 'node:fs/promises';

const TICK_MS = 1000 / 100; // USER_HZ: /proc counts CPU in 1/100 s on Linux

/**
 * utime + stime of a process in ms, and with `children` the CPU of its children that ended (cutime + cstime);
 * 0 when it is gone.
 * @example const before = await cpuMsOf(srv.pid); ...; const serverMs = (await cpuMsOf(srv.pid)) - before
 */
export async function cpuMsOf(pid: number | string, children = false): Promise<number> {
  try {
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' '); // fields from 3 on (the name may hold spaces)
    const own = Number(f[11]) + Number(f[12]); // utime, stime (fields 14, 15)
    return (own + (children ? Number(f[13]) + Number(f[14]) : 0)) * TICK_MS; // cutime, cstime (16, 17)
  } catch {
    return 0;
  }
}

/**
 * Every PostgreSQL process's CPU on this machine, ms; the postmaster's with its ended children (backends that came and
 * went). Other databases' and other sessions' work counts too: an upper bound.
 */
export async function postgresCpuMs(): Promise<number> {
  let total = 0;
  for (const pid of await readdir('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    if (!(await readFile(`/proc/${pid}/comm`, 'utf8').catch(() => '')).startsWith('postgres')) continue;
    const cmdline = await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '');
    total += await cpuMsOf(pid, cmdline.includes('-D')); // the postmaster is the one started with -D
  }
  return total;
}

/** The whole machine's CPU so far (every core, from /proc/stat), ms: busy and in all; zeros where there is no /proc. */
export async function boxCpuMs(): Promise<{ busy: number; total: number }> {
  try {
    const line = (await readFile('/proc/stat', 'utf8')).split('\n', 1)[0]!;
    // cpu user nice system idle iowait irq softirq steal (guest time is inside user already)
    const [user, nice, system, idle, iowait, irq, softirq, steal] = line.trim().split(/\s+/).slice(1, 9).map(Number);
    const idleAll = idle! + iowait!;
    const total = user! + nice! + system! + idleAll + irq! + softirq! + steal!;
    return { busy: (total - idleAll) * TICK_MS, total: total * TICK_MS };
  } catch {
    return { busy: 0, total: 0 };
  }
}

/** The share of the whole machine's CPU that was busy between two `boxCpuMs` readings (0-1), null without /proc. */
export const busyShare = (a: { busy: number; total: number }, b: { busy: number; total: number }) =>
  b.total > a.total ? (b.busy - a.busy) / (b.total - a.total) : null;

type Batches = { count: number; orders: number; transactions: number; seconds: number };

/**
 * The server's claim batches so far (/metrics): batches and the orders in them (lastunit_claim_batch_size), and the
 * claim transactions and their time (lastunit_claim_transaction_seconds: one per batch, more when a batch is sent
 * again or its orders one at a time).
 */
export async function claimBatches(metricsUrl: string): Promise<Batches> {
  const text = await (await fetch(metricsUrl, { signal: AbortSignal.timeout(10_000) })).text();
  const value = (name: string) => Number(new RegExp(`^${name} (\\S+)`, 'm').exec(text)?.[1] ?? 0);
  return {
    count: value('lastunit_claim_batch_size_count'),
    orders: value('lastunit_claim_batch_size_sum'),
    transactions: value('lastunit_claim_transaction_seconds_count'),
    seconds: value('lastunit_claim_transaction_seconds_sum'),
  };
}

/** Mean claims per batch and mean ms per claim transaction between two `claimBatches` readings; null if none ran. */
export function batchesBetween(a: Batches, b: Batches): { size: number; ms: number } | null {
  const n = b.count - a.count;
  if (n <= 0) return null;
  return {
    size: Number(((b.orders - a.orders) / n).toFixed(2)),
    ms: Number((((b.seconds - a.seconds) * 1000) / Math.max(1, b.transactions - a.transactions)).toFixed(2)),
  };
}
