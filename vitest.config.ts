import { defineConfig } from 'vitest/config';

// Files that load the machine themselves (throughput, a 2,000-subscription heap measurement, races of hundreds of
// buyers) run after the rest, one at a time: beside other files their figures and timeouts would measure the neighbours.
const ALONE = [
  'test/ws-bounds.test.ts',
  'test/bench-smoke.test.ts',
  'test/bench-channels-smoke.test.ts',
  'test/races.test.ts',
  // 100 buyers of the last unit through workerd and the Node host at once, each edge request on a pool of its own
  'test/edge-worker.test.ts',
  // reconcilers racing over processor calls bounded by a timeout
  'test/payments-tokens.test.ts',
  // a private primary and standby PostgreSQL and a storm of buyers through a failover
  'test/failover.test.ts',
  // 5,000 drop entries through two hosts while holds expire
  'test/drops-race.test.ts',
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
    projects: [
      {
        extends: true,
        // Every file has its own database, so files run in parallel: two at once (vitest's default, cores - 1, is one
        // file at a time on a 2-core machine; most of a file's time is spent waiting on servers and PostgreSQL).
        test: {
          name: 'parallel',
          include: ['test/**/*.test.ts'],
          exclude: [...ALONE, '**/node_modules/**'],
          maxWorkers: 2,
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
