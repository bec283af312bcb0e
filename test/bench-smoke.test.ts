// `npm run bench` in miniature: the real server as a child process, placeOrder over HTTP, both pg baselines, the
// database's account checked, the JSON written. Uses the suite's PostgreSQL (its own database there, dropped after).
import { describe, expect, inject, it } from 'vitest';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { runBench, type BenchResult } from '../bench/flash-sale.js';

const OUT = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'bench', 'results', 'smoke.json');
const UNITS = 20;

describe('bench (smoke)', () => {
  it('sells exactly the units with no oversell or duplicate, measures the ceiling, and writes the JSON', async () => {
    const lines: string[] = [];
    let r: BenchResult;
    try {
      r = await runBench({
        adminUrl: inject('pgAdminUrl'),
        buyers: 150,
        units: UNITS,
        concurrency: 16,
        durationS: 1,
        outFile: OUT,
        timeoutMs: 75_000,
        log: (l) => lines.push(l),
      });
    } catch (err) {
      throw new Error(`${(err as Error).message}\n${lines.join('\n')}`);
    }
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

    const json = JSON.parse(await readFile(OUT, 'utf8')) as BenchResult;
    expect(json).toMatchObject({ version: 1, ok: true, params: { buyers: 150, units: UNITS, concurrency: 16, durationS: 1 } });
    expect(json.headline).toEqual(r.headline);
    expect(json.environment.postgres).toBeTruthy();
    expect(json.scenarios.map((s) => s.id)).toEqual(['lastunit-flash', 'lastunit-hot', 'ceiling-hot', 'naive-hot', 'ceiling-flash', 'naive-flash']);
    for (const s of json.scenarios) {
      for (const field of ['sold', 'oversold', 'errors', 'claimsPerS', 'requestsPerS', 'p50Ms', 'p99Ms', 'ratioToCeiling'] as const) {
        expect(s[field], `${s.id}.${field}`).toEqual(expect.any(Number));
      }
      expect(s).toHaveProperty('duplicates');
    }
  }, 90_000);
});
