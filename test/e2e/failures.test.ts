/** Failure paths end to end: a ROUTE with nowhere to go, and failing fork branches under two strategies. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type E2e, startE2e, valid } from './helpers.ts';
import { forkWorkflow } from './workflows.ts';

let e2e: E2e;
beforeAll(async () => {
  e2e = await startE2e('failures');
});
afterAll(() => e2e.close());

describe('failed runs', () => {
  it('a ROUTE without a match or default fails the run and records the thread FAILED', async () => {
    const workflow = valid({
      id: 'no-route',
      version: 1,
      nodes: [
        { id: 'start', type: 'START' },
        {
          id: 'pick',
          type: 'ROUTE',
          config: { routes: [{ condition: 'input.go == true', targetNodeId: 'end' }] },
        },
        { id: 'end', type: 'END' },
      ],
      edges: [{ from: 'start', to: 'pick' }],
    });
    const outcome = await e2e.runtime.prepare(workflow).run({ go: false });
    // The ROUTE node itself fails, with a coded error naming it (test/e2e/audit-nodes.test.ts).
    expect(outcome.execution).toMatchObject({ status: 'FAILED', error: 'stepthread.NodeFailed' });
    expect(outcome.status).toBe('FAILED');
    expect(outcome.error).toMatchObject({ code: 'NO_ROUTE_MATCHED', nodeId: 'pick' });
    expect((await e2e.thread(outcome.threadId)).status).toBe('FAILED');
    expect((await e2e.runtime.stores.executions.getExecution(outcome.executionId)).status).toBe('FAILED');

    const taken = await e2e.runtime.prepare(workflow).run({ go: true });
    expect(taken.status).toBe('COMPLETED');
  });

  const failingBranch = (strategy: string) =>
    forkWorkflow(`branch-fails-${strategy}`, {
      paths: ['ok', 'bad'],
      join: { joinStrategy: strategy, mainPathId: 'ok' },
      profiles: { bad: 'empty' },
      extraProfiles: { empty: { provider: 'scripted', byNode: {} } },
    });

  it('ALL_COMPLETED with a failing branch fails the join, and the run', async () => {
    const outcome = await e2e.runtime.prepare(failingBranch('ALL_COMPLETED')).run();
    expect(outcome.status).toBe('FAILED');
    expect(outcome.error?.nodeId).toBe('merge');
    const threads = (await e2e.runtime.stores.threads.listThreadsOfExecution(outcome.executionId)).map(
      (entry) => entry.thread,
    );
    const bad = threads.find((thread) => thread.contextData.authorForkPathId === 'bad');
    expect(bad?.status).toBe('FAILED');
    expect(bad?.errors.at(-1)).toMatchObject({ code: 'LLM_PROVIDER_ERROR', nodeId: 'bad-work' });
  });

  it('ANY_COMPLETED with one failing branch still completes on the other', async () => {
    const outcome = await e2e.runtime.prepare(failingBranch('ANY_COMPLETED')).run();
    expect(outcome.status).toBe('COMPLETED');
    expect(outcome.output).toEqual({ merged: 'ok reply', after: 'after reply' });
  });
});
