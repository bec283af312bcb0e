// WEB_CONCURRENCY (issue 23): one `npm start` of 2 host processes on one port (node:cluster), each with its own pool,
// claim batcher and relay. The core races, one-key storms and paid orders pass against it as against one process (the
// database decides, not a process's batcher), with the sandbox processor the primary runs for both; one SIGTERM stops
// both processes, /readyz answering 503 while they drain.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawnServer, type ServerProcess } from '../kit/server.js';
import { startSandbox, type Sandbox } from '../payments/sandbox-server.js';
import { createTestDatabase, type TestDatabase } from './support/db.js';
import { CORE_API_KEYS, coreScenarios } from './support/core-scenarios.js';
import { SECRET } from './support/payments.js';

let tdb: TestDatabase;
let sandbox: Sandbox;
let srv: ServerProcess;
beforeAll(async () => {
  tdb = await createTestDatabase({ max: 6 });
  sandbox = await startSandbox({ webhookSecret: SECRET, hangMs: 3_000 });
  srv = await spawnServer({
    env: {
      DATABASE_URL: tdb.url,
      API_KEYS: CORE_API_KEYS,
      WEB_CONCURRENCY: '2',
      DATABASE_POOL_SIZE: '10',
      RATE_LIMIT_BUYER_PER_WINDOW: '0',
      SANDBOX_PAYMENTS_URL: sandbox.url,
      PAYMENT_WEBHOOK_SECRET: SECRET,
      SHUTDOWN_DRAIN_MS: '1500',
    },
  });
  sandbox.configure({ webhookUrl: `${srv.url}/webhooks/payments/sandbox` });
}, 90_000);
afterAll(async () => {
  await srv?.stop();
  await sandbox?.close();
  await tdb?.drop();
});

const pidsOf = (s: ServerProcess) =>
  (/processes: 2 \(WEB_CONCURRENCY\), pids (\d+) (\d+)/.exec(s.output()) ?? []).slice(1).map(Number);
const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};
const core = () => coreScenarios({ endpoints: [srv.endpoint], db: tdb.db, sandboxUrl: sandbox.url });

describe('a host of 2 processes on one port (WEB_CONCURRENCY=2)', () => {
  it('runs two host processes beside the primary, each with its own pool', async () => {
    const pids = pidsOf(srv);
    expect(pids).toHaveLength(2);
    expect(pids.every(alive)).toBe(true);
    // one relay per process, each LISTENing (its direct connection is opened as the process starts; through a pooler
    // the second one was seen a moment after the host's ready line)
    const listening = async () =>
      (
        await tdb.db.query(
          `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'lastunit-relay-listen'`,
        )
      ).rows[0].n;
    await expect.poll(listening, { timeout: 10_000 }).toBe(2);
  });

  it('gives the last unit to exactly one of 200 buyers', async () => {
    await core().lastUnit('HP-LAST');
  });

  it('never hands out more than 100 units to 300 buyers of 1 to 3', async () => {
    await core().hundredUnits('HP-100');
  });

  it('makes one order of 40 requests with one key sent at once', async () => {
    await core().oneKey('HP-TWINS');
  });

  it('confirms 12 paid orders of 30 buyers, one net charge each at the processor', async () => {
    await core().payments('HP-PAY');
    await core().outboxDrains();
  });

  it('stops both processes on one SIGTERM, /readyz 503 while they drain, exit code 0', async () => {
    const pids = pidsOf(srv);
    expect((await fetch(`${srv.url}/readyz`)).status).toBe(200);
    const stopped = srv.stop('SIGTERM', 20_000);
    let draining = 0;
    for (let i = 0; i < 20 && draining === 0; i++) {
      await new Promise((r) => setTimeout(r, 50));
      const r = await fetch(`${srv.url}/readyz`).catch(() => null);
      if (r?.status === 503) draining++;
    }
    expect(draining).toBe(1);
    expect(await stopped).toBe(0);
    expect(pids.some(alive)).toBe(false);
  });
});
