import { defineConfig } from 'vitest/config';

export default defineConfig({
  // One graphql realm: Node loads graphql's CommonJS build for every dependency, so inlined test code must too.
  resolve: { alias: [{ find: /^graphql$/, replacement: 'graphql/index.js' }] },
  test: {
    include: ['test/**/*.test.ts'],
    reporters: ['default', './test/support/fail-on-failed-files.ts'],
    globalSetup: ['test/support/global-setup.ts'],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    pool: 'forks',
    // every file has its own database, so files run in parallel
    fileParallelism: true,
  },
});
