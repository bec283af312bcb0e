// `npm run bench` in miniature: the real server as a child process, placeOrder over HTTP, both pg baselines, the
// database's account checked, the JSON written. Uses the suite's PostgreSQL (its own database there, dropped after).
import { describe, expect, inject, it } from 'vitest';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { runBench, type BenchResult } from '../bench/flash-sale.js';
import { pgbenchVersion } from '../bench/pgbench.js';

const OUT = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'bench', 'results', 'smoke.json');
const SVG = OUT.replace(/\.json$/, '.svg');
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
        svgFile: SVG,
        chartClients: [1],
        chartDurationS: 1,
        fanout: { subscribers: 20, sales: 5 },
        timeoutMs: 150_000,
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

    // the four ratios, each from figures of this run
    expect(r.ceiling.via).toBe(pgbenchVersion() ? 'pgbench' : 'pg');
    expect(r.ratios.hotVsCeiling).toMatchObject({ lastunitClaimsPerS: hot.claimsPerS, ceilingClaimsPerS: by('ceiling-hot').claimsPerS, clients: 16 });
    for (const k of ['hotVsCeiling', 'soldOutVsTrivial', 'trivialVsBareYoga', 'fanoutFreshness'] as const) expect(r.ratios[k].ratio, k).toBeGreaterThan(0);
    expect(r.cheap.soldOut.requestsPerS).toBeGreaterThan(0);
    expect(r.fanout).toMatchObject({ subscribers: 20, sales: 5, sold: 5, fresh: 20 });
    expect(r.byClients.map((c) => c.clients)).toEqual([1, 16]);
    for (const c of r.byClients) for (const e of ['lastunit', 'ceiling', 'naive'] as const) expect(c[e].claimsPerS, `${c.clients} ${e}`).toBeGreaterThan(0);
    const svg = await readFile(SVG, 'utf8');
    expect(svg).toMatch(/^<svg [^>]*xmlns="http:\/\/www.w3.org\/2000\/svg"/);
    expect(svg).toContain('claims per second');
    expect(lines.some((l) => /fan-out|RATIOS|ceiling runs through/.test(l))).toBe(true);

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
  }, 180_000);
});
