// The order the suite's files start in (vitest.config.ts): vitest's own (failed first, then longest first, by the
// last run's cache; by size on a fresh clone), with the files that load the machine themselves (HEAVY) spread evenly
// through the queue instead, so that two of them rarely run at once beside the rest.
import { relative } from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

export function spreadSequencer(heavy: readonly string[]) {
  return class SpreadHeavy extends BaseSequencer {
    override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
      const sorted = await super.sort(files);
      const rel = (f: TestSpecification) => relative(this.ctx.config.root, f.moduleId);
      const isHeavy = (f: TestSpecification) => heavy.includes(rel(f));
      const spread = sorted.filter(isHeavy).sort((a, b) => heavy.indexOf(rel(a)) - heavy.indexOf(rel(b)));
      const rest = sorted.filter((f) => !isHeavy(f));
      if (!spread.length) return sorted;
      // the heavy files at evenly spaced places among the others of their project (groupOrder 0: the 'parallel' one)
      const first = rest.findIndex((f) => f.project.name === spread[0]!.project.name);
      const same = rest.filter((f) => f.project.name === spread[0]!.project.name).length;
      const step = Math.max(1, Math.floor(same / spread.length));
      const out = [...rest];
      for (const [i, f] of spread.entries()) out.splice(Math.max(0, first) + i * (step + 1), 0, f);
      return out;
    }
  };
}
