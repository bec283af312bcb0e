// The measuring tools docs/capacity.md reads, in miniature, as a user runs them: `npm run bench:costs` (what a
// trivial and a sold-out answer cost), `npm run bench:wal` (what a claim's and a refusal's WAL is made of) and
// `npx tsx bench/ab-serial.ts` (a lever, one server at a time), each
// against the suite's PostgreSQL, each with a bench database of its own. Their figures are whatever this
// machine does; what is checked is that they run through the real server and print every figure, each a number that
// can be one (a tool that stops measuring, or prints NaN, fails here).
import { describe, expect, inject, it } from 'vitest';
import { execFile } from 'node:child_process';
import { ROOT } from '../kit/root.js';

const run = (script: string, env: Record<string, string>, command = ['npm', 'run', '-s', script]) =>
  new Promise<{ code: number | null; out: string }>((resolve) => {
    const child = execFile(
      command[0]!,
      command.slice(1),
      { cwd: ROOT, timeout: 120_000, env: { ...process.env, DATABASE_URL: inject('pgAdminUrl'), ...env } },
      (_err, stdout, stderr) => resolve({ code: child.exitCode, out: `${stdout}${stderr}` }),
    );
  });

describe('the measuring tools (smoke)', () => {
  it('bench:costs prints per-answer costs of both kinds of answer and the claim batches', {
    timeout: 130_000,
  }, async () => {
    const r = await run('bench:costs', { COSTS_ROUNDS: '1', COSTS_ROUND_S: '1', COSTS_CLIENTS: '8' });
    expect(r.code, r.out).toBe(0);
    const line =
      /^(trivial|sold-out)\s+(\d+) answers\/s {2}per answer: server (\d+) us, PostgreSQL (\d+) us, clients (\d+) us; server preempted ([\d.]+) times(?:; claim batches of ([\d.]+), ([\d.]+) ms each)?/gm;
    const rows = [...r.out.matchAll(line)];
    expect(
      rows.map((m) => m[1]),
      r.out,
    ).toEqual(['trivial', 'sold-out']);
    for (const m of rows) {
      expect(Number(m[2]), m[0]).toBeGreaterThan(0); // answers/s
      expect(Number(m[3]), m[0]).toBeGreaterThan(0); // the server worked for every answer
    }
    const soldOut = rows[1]!;
    expect(Number(soldOut[4]), soldOut[0]).toBeGreaterThan(0); // a refusal is written: PostgreSQL worked
    expect(Number(soldOut[7]), soldOut[0]).toBeGreaterThanOrEqual(1); // refusals per batch
    expect(Number(soldOut[8]), soldOut[0]).toBeGreaterThan(0); // ms per batch
    expect(r.out).toMatch(/^sold-out over trivial: \d+\.\d\d \(8 clients, 1 pairs of 1 s\)$/m);
  });

  it('bench:wal prints the WAL per claim and per refusal, by record type', { timeout: 130_000 }, async () => {
    const r = await run('bench:wal', { WAL_ROUND_S: '1', WAL_CLIENTS: '8' });
    expect(r.code, r.out).toBe(0);
    const heads = [
      ...r.out.matchAll(/^(hot SKU claim|sold-out answer): (\d+) answers in 1 s, (\d+) B of WAL per answer$/gm),
    ];
    expect(
      heads.map((m) => m[1]),
      r.out,
    ).toEqual(['hot SKU claim', 'sold-out answer']);
    for (const m of heads) {
      expect(Number(m[2]), m[0]).toBeGreaterThan(0);
      // a claim or a refusal writes rows (key, order, line...): far more than a commit record
      expect(Number(m[3]), m[0]).toBeGreaterThan(500);
    }
    // under each head the record types, the rows' inserts among them
    const sections = r.out.split(/^(?:hot SKU claim|sold-out answer): /m).slice(1);
    for (const s of sections)
      expect(s, r.out).toMatch(
        /^ {2}Heap\/INSERT\s+[\d.]+ records\s+\d+ B {2}full-page images\s+\d+ B {2}per answer$/m,
      );
  });

  it('bench/ab-serial.ts runs each side on a server of its own and prints their rates and costs', {
    timeout: 130_000,
  }, async () => {
    const r = await run(
      'ab-serial',
      { AB_A: '', AB_B: 'WEBHOOK_DELIVERY=off', AB_ROUNDS: '1', AB_ROUND_S: '1', AB_CLIENTS: '8' },
      ['npx', 'tsx', 'bench/ab-serial.ts'],
    );
    expect(r.code, r.out).toBe(0);
    const rows = [
      ...r.out.matchAll(
        /^(A|B) (\d+) claims\/s {2}per claim: server ([\d.]+) ms, PostgreSQL \(every process\) ([\d.]+) ms; machine (\d+)% busy; batches (\{.*\}|null)$/gm,
      ),
    ];
    expect(
      rows.map((m) => m[1]),
      r.out,
    ).toEqual(['A', 'B']);
    for (const m of rows) {
      expect(Number(m[2]), m[0]).toBeGreaterThan(0);
      expect(Number(m[3]), m[0]).toBeGreaterThan(0);
      expect(Number(m[4]), m[0]).toBeGreaterThan(0);
    }
    expect(r.out).toMatch(/^A \d+\/s {2}B \d+\/s {2}B\/A \d+\.\d{3} \(1 pairs of 1 s, 8 clients\)$/m);
  });
});
