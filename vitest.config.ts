import os from 'node:os';
import path from 'node:path';
import { defineConfig } from 'vitest/config';
import { spreadSequencer } from './test/support/sequencer.js';

// Node's on-disk compile cache for every process of the run (the workers and the ~70 servers and scripts the files
// start, which inherit it): loading the host took 1.2 s of CPU, a fifth of it V8 compiling the same modules again
process.env.NODE_COMPILE_CACHE ??= path.join(os.tmpdir(), `lastunit-compile-cache-${os.userInfo().uid}`);

// Files that load the machine themselves (throughput, a 2,000-subscription heap measurement, races of hundreds of
// buyers) run among the others, spread through the queue so that two rarely run at once (test/support/sequencer.ts):
// none of them asserts a figure of speed, so a neighbour only slows them. Figures are the bench's, on a quiet machine.
const HEAVY = [
  'test/bench-smoke.test.ts',
  'test/bench-channels-smoke.test.ts',
  // 5,000 drop entries through two hosts while holds expire
  'test/drops-race.test.ts',
  'test/ws-bounds.test.ts',
  'test/races.test.ts',
  // 100 buyers of the last unit through workerd and the Node host at once, each edge request on a pool of its own
  'test/edge-worker.test.ts',
];
// Files whose outcome depends on time, run after the rest, one at a time: beside other files a timeout they race
// would measure the neighbours.
const ALONE = [
  // reconcilers racing over processor calls bounded by a timeout
  'test/payments-tokens.test.ts',
  // a private primary and standby PostgreSQL and a storm of buyers through a failover
  'test/failover.test.ts',
];

export default defineConfig({
  // One graphql realm: Node loads graphql's CommonJS build for every dependency, so inlined test code must too.
  resolve: { alias: [{ find: /^graphql$/, replacement: 'graphql/index.js' }] },
  test: {
    reporters: ['default', './test/support/fail-on-failed-files.ts'],
    globalSetup: ['test/support/global-setup.ts'],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    pool: 'forks',
    sequence: { sequencer: spreadSequencer(HEAVY) },
    projects: [
      {
        extends: true,
        // Every file has its own database, so files run in parallel: three at once on a 2-core machine (vitest's
        // default, cores - 1, is one at a time there; most of a file's time is spent waiting on servers and PostgreSQL:
        // the suite kept 1.3 of 2 cores busy with two at once).
        test: {
          name: 'parallel',
          include: ['test/**/*.test.ts'],
          exclude: [...ALONE, '**/node_modules/**'],
          maxWorkers: 3,
          // one worker process runs its files one after another without re-importing the app's modules for each (the
          // module graph took ~1 s per file, 106 s of a 440 s suite): every file keeps its state in its own database,
          // servers and clients, none in module state it changes
          isolate: false,
        },
      },
      {
        extends: true,
        test: { name: 'alone', include: ALONE, fileParallelism: false, isolate: false, sequence: { groupOrder: 1 } },
      },
    ],
  },
});
