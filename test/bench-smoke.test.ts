// `npm run bench` in miniature, as a user runs it (the CLI, default output files): the real server as a child process,
// placeOrder over HTTP, both pg baselines, the database's account checked, the JSON and the chart written under
// bench/results/ and nothing else in the working tree changed. Uses the suite's PostgreSQL (its own database there).
import { describe, expect, inject, it } from 'vitest';
import { execFile, execFileSync } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import type { BenchResult } from '../bench/flash-sale.js';
import { pgbenchVersion } from '../bench/pgbench.js';
import { ROOT } from '../kit/root.js';

const OUT = path.join(ROOT, 'bench', 'results', 'latest.json');
const SVG = OUT.replace(/\.json$/, '.svg');
const UNITS = 20;
const gitStatus = () =>
  execFileSync('git', ['status', '--porcelain', '--untracked-files=all'], { cwd: ROOT, encoding: 'utf8' });

describe('bench (smoke)', () => {
  it('sells exactly the units with no oversell or duplicate, measures the ceiling, writes its files under bench/results/ only', async () => {
    const before = gitStatus();
    const run = await new Promise<{ code: number | null; out: string }>((resolve) => {
      const child = execFile(
        'npm',
        ['run', '-s', 'bench'],
        {
          cwd: ROOT,
          timeout: 170_000,
          maxBuffer: 16 * 1024 * 1024,
          env: {
            ...process.env,
            DATABASE_URL: inject('pgAdminUrl'),
            BENCH_BUYERS: '150',
            BENCH_UNITS: String(UNITS),
            BENCH_CONCURRENCY: '16',
            BENCH_DURATION_S: '1',
            BENCH_CHART_CLIENTS: '1',
            BENCH_CHART_DURATION_S: '1',
            BENCH_SUBSCRIBERS: '20',
            BENCH_SALES: '5',
            // the stock-bucket rows at 1 and 2 buckets, 1 s each (the default 1,2,4,8 x 4 s is for a measuring run)
            BENCH_BUCKETS: '1,2',
            BENCH_BUCKET_DURATION_S: '1',
            BENCH_PASSES: '1', // the cheap answers' rounds once (a measuring run repeats them)
          },
        },
        (_err, stdout, stderr) => resolve({ code: child.exitCode, out: `${stdout}${stderr}` }),
      );
    });
    expect(run.code, run.out).toBe(0);
    expect(gitStatus()).toBe(before); // docs/bench.svg only with --update-docs
    const r = JSON.parse(await readFile(OUT, 'utf8')) as BenchResult;
    expect(run.out).toContain('units sold can exceed answered, never sent');
    const by = (id: string) => {
      const s = r.scenarios.find((x) => x.id === id);
      if (!s) throw new Error(`no scenario ${id}`);
      return s;
    };

    expect(r.problems).toEqual([]);
    expect(r.ok).toBe(true);

    const flash = by('lastunit-flash');
    expect(flash).toMatchObject({ requests: 150, sold: UNITS, oversold: 0, duplicates: 0, errors: 0, conserved: true });
    expect(flash.refused).toBe(150 - UNITS);
    expect(flash.inventory).toEqual({ available: 0, reserved: UNITS, sold: 0 });

    const hot = by('lastunit-hot');
    expect(hot).toMatchObject({ oversold: 0, duplicates: 0, errors: 0, conserved: true });
    expect(hot.claimsPerS).toBeGreaterThan(0);
    expect(by('ceiling-hot').claimsPerS).toBeGreaterThan(0);
    expect(by('ceiling-flash')).toMatchObject({ sold: UNITS, oversold: 0, conserved: true });
    const naive = by('naive-flash');
    expect(naive.oversold).toBe(Math.max(0, naive.sold - UNITS));
    expect(r.headline.ratio).toBeGreaterThan(0);

    // the four ratios, each from figures of this run
    expect(r.ceiling.via).toBe(pgbenchVersion() ? 'pgbench' : 'pg');
    expect(r.ratios.hotVsCeiling).toMatchObject({
      lastunitClaimsPerS: hot.claimsPerS,
      ceilingClaimsPerS: by('ceiling-hot').claimsPerS,
      clients: 16,
    });
    for (const k of ['hotVsCeiling', 'soldOutVsTrivial', 'trivialVsBareYoga', 'fanoutFreshness'] as const)
      expect(r.ratios[k].ratio, k).toBeGreaterThan(0);
    expect(r.cheap.soldOut.requestsPerS).toBeGreaterThan(0);
    expect(r.fanout).toMatchObject({ subscribers: 20, sales: 5, sold: 5, fresh: 20 });
    const bucketRows = r.buckets;
    expect(bucketRows.map((b) => b.label)).toEqual(
      expect.arrayContaining(['pgbench bare claim, 1 row', 'lastunit hot SKU, 1 row', 'lastunit hot SKU, 2 buckets']),
    );
    for (const b of bucketRows) expect(b.perS, b.label).toBeGreaterThan(0);
    // every lastunit hot-SKU row was checked in the database afterwards: conserved, no duplicate, no false sold out
    const hotRows = bucketRows.filter((b) => b.label.startsWith('lastunit hot SKU'));
    expect(hotRows.map((b) => b.problems)).toEqual(hotRows.map(() => []));
    expect(run.out).toMatch(/lastunit rows checked in the database afterwards: 2 of 2 with units conserved/);
    // each lastunit row says how its claims were batched (the server's /metrics) and every row what the box spent
    for (const b of hotRows) expect(b.batch?.size, b.label).toBeGreaterThanOrEqual(1);
    for (const b of bucketRows) expect(b.clientsCpuMsPerAnswer, b.label).toBeGreaterThan(0);
    // the capacity model worked out from these rows (bench/capacity-model.ts), printed and in the JSON
    expect(r.capacity?.inputs.bareClaimsPerS).toBe(
      bucketRows.find((b) => b.label === 'pgbench bare claim, 1 row')!.perS,
    );
    expect(r.capacity?.cells).toHaveLength(18);
    expect(r.capacity?.thisBox.rows.map((x) => x.buckets)).toEqual([1, 2]);
    expect(run.out).toContain('CAPACITY MODEL (docs/capacity.md), from this run');
    // PostgreSQL alone running lastunit's batch statement at the batch size the server used, a stream per stock row
    const k = Math.round(bucketRows.find((b) => b.label === 'lastunit hot SKU, 1 row')!.batch!.size);
    const sqlOnly = bucketRows.filter((b) => b.label.startsWith('pgbench lastunit batches, '));
    expect(sqlOnly.map((b) => [b.buckets, b.clients])).toEqual(
      k >= 2
        ? [
            [1, 1],
            [2, 2],
          ]
        : [],
    );
    for (const b of sqlOnly) expect([b.claims > 0, b.errors], b.label).toEqual([true, 0]);
    expect(r.capacity?.inputs.sqlOnly.map((x) => x.buckets)).toEqual(k >= 2 ? [1, 2] : []);
    expect(r.byClients.map((c) => c.clients)).toEqual([1, 16]);
    for (const c of r.byClients)
      for (const e of ['lastunit', 'ceiling', 'naive'] as const)
        expect(c[e].claimsPerS, `${c.clients} ${e}`).toBeGreaterThan(0);
    const svg = await readFile(SVG, 'utf8');
    expect(svg).toMatch(/^<svg [^>]*xmlns="http:\/\/www.w3.org\/2000\/svg"/);
    expect(svg).toContain('claims per second');
    expect(run.out).toMatch(/ceiling runs through/);
    expect(run.out).toMatch(/RATIOS/);

    expect(r).toMatchObject({
      version: 1,
      ok: true,
      params: { buyers: 150, units: UNITS, concurrency: 16, durationS: 1 },
    });
    expect(r.environment.postgres).toBeTruthy();
    expect(r.scenarios.map((s) => s.id)).toEqual([
      'lastunit-flash',
      'lastunit-hot',
      'lastunit-hot-2p',
      'ceiling-hot',
      'naive-hot',
      'ceiling-flash',
      'naive-flash',
    ]);
    for (const s of r.scenarios) {
      for (const field of [
        'sent',
        'sold',
        'oversold',
        'errors',
        'claimsPerS',
        'requestsPerS',
        'p50Ms',
        'p99Ms',
        'ratioToCeiling',
      ] as const) {
        expect(s[field], `${s.id}.${field}`).toEqual(expect.any(Number));
      }
      expect(s).toHaveProperty('duplicates');
      // what was sold was asked for: a row never sells more than it sent
      if (s.engine !== 'naive') expect(s.sold, s.id).toBeLessThanOrEqual(s.sent);
      expect(run.out, s.id).toContain(s.label); // every row named in words
    }
  }, 180_000);
});
