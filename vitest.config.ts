import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    pool: 'forks',
    // Temporary files under one directory, removed after the run (test/support/temp-root.ts).
    globalSetup: ['test/support/temp-root.ts'],
    testTimeout: 30_000,
    // Setup hooks synthesize stacks (cdk-nag included) and start services: seconds on an idle machine,
    // far more on a loaded CI runner. A hang still ends, just later.
    hookTimeout: 120_000,
  },
});
