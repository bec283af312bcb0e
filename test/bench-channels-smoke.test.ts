// `npm run bench:channels` in miniature: a short sale day, the three ways, the real server and the marketplace
// sandboxes; the bench's own account checks (never negative, nothing made or lost, each marketplace event once) pass
// and every way reports its figures.
import { describe, expect, inject, it } from 'vitest';
import os from 'node:os';
import path from 'node:path';
import { existsSync, readFileSync } from 'node:fs';
import { runChannelsBench } from '../bench/channels.js';

describe('bench:channels (smoke)', () => {
  it('runs the three ways on the same traffic and keeps the account', async () => {
    const lines: string[] = [];
    const outDir = path.join(os.tmpdir(), `lastunit-bench-channels-${process.pid}`);
    const r = await runChannelsBench({
      adminUrl: inject('pgAdminUrl'),
      dayMinutes: 120,
      msPerMinute: 20,
      skus: 2,
      unitsPerSku: 6,
      outDir,
      log: (l) => lines.push(l),
    });
    expect(
      r.modes.flatMap((m) => m.problems),
      lines.join('\n'),
    ).toEqual([]);
    expect(r.ok).toBe(true);
    expect(r.modes.map((m) => m.id)).toEqual(['sync-15min', 'immediate', 'immediate+buf2']);
    for (const m of r.modes) {
      expect(m.unsold + m.takenStorefront + m.soldMarketplaces).toBe(r.units); // every unit accounted for
      expect(m.pushes).toBeGreaterThan(0);
      expect(m.soldMarketplaces + m.oversells).toBe(m.marketplaceOrders); // one unit per marketplace order: sold once or refused once
    }
    expect(lines.some((l) => l.startsWith('| sync every 15 min'))).toBe(true);
    expect(existsSync(r.svg) && readFileSync(r.svg, 'utf8')).toMatch(/^<svg/);
  }, 240_000);
});
