/**
 * Global variables are shared by all threads (seed 000 §3): concurrent branches that update one
 * never lose a write. A child's write lands on the root only if the root is as the child read it;
 * otherwise the step runs again against the new value.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { crashAfterFirstAttempt, type E2e, startE2e } from './helpers.ts';
import { counterWorkflow } from './workflows.ts';

let e2e: E2e;
beforeAll(async () => {
  e2e = await startE2e('shared-globals');
});
afterAll(() => e2e.close());

describe('shared global variables', () => {
  it('50 parallel branches incrementing a counter and appending to an array lose no update', async () => {
    const outcome = await e2e.runtime.prepare(counterWorkflow(50)).run({}, { noRetryWaits: true });
    expect(outcome.error).toBeUndefined();
    const output = outcome.output as { done: number; seen: string[] };
    expect(output.done).toBe(50);
    expect([...output.seen].sort()).toEqual(Array.from({ length: 50 }, (_, i) => `p${i}`).sort());
    // The JOIN took the bookkeeping of the children's writes off the root.
    const { thread } = await e2e.runtime.stores.threads.getThread(outcome.threadId);
    expect(thread.globalWriters).toBeUndefined();
  }, 120_000);

  it('under crash injection (every Task dies once after its writes landed) too', async () => {
    const crashed: string[] = [];
    const outcome = await e2e.runtime
      .prepare(counterWorkflow(12))
      .run({}, { noRetryWaits: true, interceptTask: crashAfterFirstAttempt(crashed) });
    expect(outcome.error).toBeUndefined();
    expect(crashed.length).toBeGreaterThan(24);
    const output = outcome.output as { done: number; seen: string[] };
    expect(output.done).toBe(12);
    expect(output.seen).toHaveLength(12);
  }, 120_000);
});
