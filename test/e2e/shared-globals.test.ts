/**
 * Global variables are shared by all threads (seed 000 §3): concurrent branches that update one
 * never lose a write. A child's write lands on the root only if the root is as the child read it;
 * otherwise the step runs again against the new value.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { crashAfterFirstAttempt, type E2e, startE2e, valid } from './helpers.ts';

let e2e: E2e;
beforeAll(async () => {
  e2e = await startE2e('shared-globals');
});
afterAll(() => e2e.close());

function counterWorkflow(paths: number) {
  const ids = Array.from({ length: paths }, (_, i) => `p${i}`);
  return valid({
    id: `counter-${paths}`,
    version: 1,
    variables: [
      { name: 'done', type: 'number', scope: 'global', initial: 0 },
      { name: 'seen', type: 'array', scope: 'global', initial: [] },
    ],
    nodes: [
      { id: 'start', type: 'START' },
      {
        id: 'split',
        type: 'FORK',
        config: { forkPathIds: ids, forkStrategy: 'parallel', childNodeIds: ids.map((id) => `${id}-inc`) },
      },
      ...ids.flatMap((id) => [
        {
          id: `${id}-inc`,
          type: 'VARIABLE',
          config: { variableName: 'done', variableType: 'number', expression: 'done + 1' },
        },
        {
          id: `${id}-note`,
          type: 'VARIABLE',
          config: { variableName: 'seen', variableType: 'array', expression: `concat(seen, ['${id}'])` },
        },
      ]),
      { id: 'merge', type: 'JOIN', config: { forkPathIds: ids, joinStrategy: 'ALL_COMPLETED', timeout: 0 } },
      { id: 'end', type: 'END', config: { output: { done: '{{done}}', seen: '{{seen}}' } } },
    ],
    edges: [
      { from: 'start', to: 'split' },
      ...ids.flatMap((id) => [
        { from: `${id}-inc`, to: `${id}-note` },
        { from: `${id}-note`, to: 'merge' },
      ]),
      { from: 'merge', to: 'end' },
    ],
  });
}

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
