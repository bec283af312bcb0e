// The capacity model the bench prints (bench/capacity-model.ts, docs/capacity.md): worked from a run's bucket rows,
// checked here against the same arithmetic done by hand. The rows' figures are those of a real run on the 2-core box.
import { describe, expect, it } from 'vitest';
import type { CostRow } from '../bench/buckets.js';
import { capacityModel, formatCapacityModel } from '../bench/capacity-model.js';

const base = { clients: 64, answers: 10_000, vsBare: null, load: 3.9, errors: 0, walBytesPerAnswer: 350 };
const pgbench = (label: string, perS: number): CostRow => ({
  ...base,
  label,
  buckets: 1,
  claims: 10_000,
  perS,
  serverCpuMsPerAnswer: null,
  pgCpuMsPerAnswer: 0.77,
  clientsCpuMsPerAnswer: 0.05,
  boxBusy: 0.95,
  answersPerCommit: 0.96,
  batch: null,
});
const lastunit = (buckets: number, perS: number, serverMs: number, pgMs: number, perCommit: number): CostRow => ({
  ...base,
  label: buckets === 1 ? 'lastunit hot SKU, 1 row' : `lastunit hot SKU, ${buckets} buckets`,
  buckets,
  claims: 10_000,
  perS,
  serverCpuMsPerAnswer: serverMs,
  pgCpuMsPerAnswer: pgMs,
  clientsCpuMsPerAnswer: 0.04,
  boxBusy: 0.97,
  walBytesPerAnswer: 6_400,
  answersPerCommit: perCommit - 0.5,
  batch: { size: perCommit, ms: 1.9 },
  problems: [],
});

const rows: CostRow[] = [
  pgbench('pgbench bare claim, 1 row', 1546),
  pgbench('pgbench bare claim, 8 buckets', 4884),
  lastunit(1, 2433, 0.281, 0.332, 5.1),
  lastunit(8, 2097, 0.313, 0.43, 3.5),
  pgbench('pgbench bare claim, 1 row, 5 per commit', 6000),
  pgbench('pgbench lastunit batches, 1 row', 9000),
  { ...pgbench('pgbench lastunit batches, 8 buckets', 11000), buckets: 8 },
  { ...lastunit(1, 3326, 0.237, 0.146, 20), label: 'lastunit sold-out answers', claims: 0 },
];

describe('capacity model', () => {
  const model = capacityModel(rows, 2)!;
  const cell = (cores: number, buckets: number) => model.cells.find((c) => c.cores === cores && c.buckets === buckets);

  it("takes one row's commits/s from pgbench's claim at lastunit's batch size", () => {
    // 1,546 commits/s at one claim per commit; 6,000 claims/s at 5 per commit is 1,200 commits/s, the one used
    expect(model.inputs.bareClaimsPerS).toBe(1546);
    expect(model.inputs.sharedCommits).toEqual({ k: 5, claimsPerS: 6000 });
    expect(model.inputs.rowCommitsPerS).toBe(1200);
    expect(
      capacityModel(
        rows.filter((r) => !r.label.endsWith('per commit')),
        2,
      )!.inputs.rowCommitsPerS,
    ).toBe(1546);
    // the sold-out row is no claim row: it gives the refusal's cost only
    expect(model.inputs.claim.map((c) => c.buckets)).toEqual([1, 8]);
    expect(model.inputs.refusalMs).toBeCloseTo(0.383, 9);
    expect(model.inputs.sqlOnly).toEqual([
      { buckets: 1, claimsPerS: 9000 },
      { buckets: 8, claimsPerS: 11000 },
    ]);
  });

  it('is the smaller of the CPU term and the rows term, naming which', () => {
    // 2 cores, one row: 2000 / 0.613 = 3,263 (CPU) against 1 x 1,200 x 5.1 = 6,120 (rows)
    expect(cell(2, 1)).toEqual({ cores: 2, buckets: 1, claimsPerS: 3263, limit: 'CPU' });
    // 32 cores, one row: 52,202 (CPU) against 6,120 (rows): more cores buy nothing for one row
    expect(cell(32, 1)).toEqual({ cores: 32, buckets: 1, claimsPerS: 6120, limit: 'rows' });
    // 32 cores, 4 buckets: the costs of the nearest measured count below (1 row): 4 x 1,200 x 5.1 = 24,480
    expect(cell(32, 4)).toEqual({ cores: 32, buckets: 4, claimsPerS: 24480, limit: 'rows' });
    // 32 cores, 8 buckets: 32000 / 0.743 = 43,069 (CPU) against 8 x 1,200 x 3.5 = 33,600 (rows)
    expect(cell(32, 8)).toEqual({ cores: 32, buckets: 8, claimsPerS: 33600, limit: 'rows' });
    // 32 buckets use the 8-bucket row's costs, the largest measured
    expect(cell(32, 32)).toEqual({ cores: 32, buckets: 32, claimsPerS: 43069, limit: 'CPU' });
    expect(model.cells).toHaveLength(3 * 6);
  });

  it('says what a host pays for across SKUs and what one process serves', () => {
    expect(model.perHost[0]).toEqual({ cores: 2, claimsPerS: 3263, refusalsPerS: 5222 });
    expect(model.perHost[2]).toEqual({ cores: 32, claimsPerS: 52202, refusalsPerS: 83551 });
    expect(model.perProcessClaimsPerS).toBe(3559); // 1000 / 0.281 ms of server CPU per claim
  });

  it("checks itself against this machine's rows, the load generator's CPU counted", () => {
    // 2000 / (0.613 + 0.04) = 3,063 for one row, measured 2,433 at 97% busy
    expect(model.thisBox.rows[0]).toEqual({
      buckets: 1,
      modelClaimsPerS: 3063,
      limit: 'CPU',
      measuredClaimsPerS: 2433,
      boxBusy: 0.97,
    });
  });

  it('prints its inputs, the table and the check', () => {
    const text = formatCapacityModel(model);
    expect(text).toContain('CAPACITY MODEL');
    expect(text).toContain(
      'one row commits 1,200 times/s: pgbench bare claim 1,546/s at 1 per commit, 6,000/s at 5 per commit (1,200 commits/s)',
    );
    expect(text).toMatch(/^ +1 +3,263 CPU +6,120 rows +6,120 rows$/m);
    expect(text).toMatch(/^ +32 +2,692 CPU +10,767 CPU +43,069 CPU$/m);
    expect(text).toContain('1 row model 3,063 CPU, measured 2,433 at 97% busy');
    expect(text).toContain("PostgreSQL alone, lastunit's batch statement without the HTTP path");
    expect(text).toContain('1 row 9,000/s, 8 buckets 11,000/s');
    expect(text).toContain(
      "at 32 cores and 32 buckets: up to 276 MB/s of WAL (6,400 B per claim, this run's lowest), 12,305 commits/s",
    );
    expect(text).toContain('one host process: about 3,559 claims/s on one core of CPU');
  });

  it('is absent without the single-row pgbench claim or a lastunit row', () => {
    expect(capacityModel(rows.slice(1), 2)).toBeNull();
    expect(capacityModel([rows[0]!], 2)).toBeNull();
  });
});
