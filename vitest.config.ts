import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    pool: 'forks',
    // Two files at a time even on two cores (vitest's default there is one): most files wait on child
    // processes, sockets and services more than they compute, so the suite takes about three
    // quarters of the time (measured 10.7 against 14.2 minutes on two cores).
    maxWorkers: 2,
    minWorkers: 1,
    // Temporary files under one directory, removed after the run (test/support/temp-root.ts).
    globalSetup: ['test/support/temp-root.ts'],
    testTimeout: 30_000,
    // Setup hooks synthesize stacks (cdk-nag included) and start services: seconds on an idle machine,
    // far more on a loaded CI runner. A hang still ends, just later.
    hookTimeout: 120_000,
    // expect.poll waits for what a page or a process shows next: 1 s (the default) is not always
    // enough on a loaded CI runner, and a poll that passes returns as soon as it does.
    expect: { poll: { timeout: 15_000 } },
  },
});
