import { defineConfig } from 'vitest/config';

/** `npm run test:cloud` only (run.sh sets the assembly it runs against); `npm test` never picks it up. */
export default defineConfig({
  test: {
    include: ['test/cloud/**/*.suite.ts'],
    pool: 'forks',
    // Temporary files under one directory, removed after the run (test/support/temp-root.ts).
    globalSetup: ['test/support/temp-root.ts'],
    poolOptions: { forks: { singleFork: true } },
    testTimeout: 120_000,
    hookTimeout: 120_000,
  },
});
