/**
 * `stepthread:resume` (continue-as-new): the successor execution's first Task claims the root thread
 * exactly where its predecessor left it, and refuses anything else without touching the thread.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Envelope } from '../../../engine/thread/types.ts';
import { dispatch } from '../../../functions/handlers/dispatch.ts';
import type { TaskNode } from '../../../functions/handlers/task.ts';
import { failureOf, type Harness, run, startEvent, startHarness } from './harness.ts';

let h: Harness;
beforeAll(async () => {
  h = await startHarness('resume');
});
afterAll(() => h.close());

const loopStart: TaskNode = { id: 'ls', type: 'LOOP_START', config: { loopId: 'L', maxIterations: 5 } };
const loopEnd: TaskNode = { id: 'le', type: 'LOOP_END', config: { loopId: 'L' } };

/** A run that just finished its LOOP_END step, as `le:continue` hands it over. */
async function atContinuation(executionId: string): Promise<Envelope> {
  const deps = h.deps();
  let env = (await dispatch({ ...startEvent(executionId), historyEvents: 8 }, deps)) as Envelope;
  env = (await dispatch(
    { action: 'execute', node: loopStart, envelope: env, historyEvents: 7 },
    deps,
  )) as Envelope;
  return (await dispatch(
    { action: 'execute', node: loopEnd, envelope: env, historyEvents: 7 },
    deps,
  )) as Envelope;
}

function resumeEvent(executionId: string, envelope: Envelope) {
  return {
    action: 'resume',
    node: { id: 'stepthread:resume', type: 'START', workflowId: 'wf' },
    executionId,
    envelope,
    resume: { at: 'le:choice', node: { id: 'le', type: 'LOOP_END' } },
    historyEvents: 12,
  };
}

describe('resume', () => {
  it('moves the root thread to the new execution without a step, and starts its count afresh', async () => {
    const env = await atContinuation('r-1');
    expect(env).toMatchObject({ step: 3, history: 22, loop: { exit: false } });
    const before = (await h.stores.threads.getThread(env.threadId)).thread;
    const resumed = await dispatch(resumeEvent('r-1b', env), h.deps());
    expect(resumed).toEqual({
      ...env,
      executionId: 'r-1b',
      history: 12,
      resumeAt: 'le:choice',
    });
    const after = (await h.stores.threads.getThread(env.threadId)).thread;
    expect(after.step).toBe(before.step);
    expect(after.variables).toEqual(before.variables);
    expect(after.metadata).toEqual({
      ...before.metadata,
      executionId: 'r-1b',
      firstExecutionId: 'r-1',
      continuations: 1,
      continuedAt: '2025-01-01T00:00:00.000Z',
    });
    // Recorded outside a step: in the thread's journal, not on its head.
    const { events } = await h.stores.threads.readJournal(env.threadId);
    expect(events.at(-1)).toMatchObject({
      type: 'THREAD_CONTINUED',
      nodeId: 'le',
      fromExecutionId: 'r-1',
      toExecutionId: 'r-1b',
      step: 3,
    });
    expect(await h.stores.executions.getExecution('r-1')).toMatchObject({
      status: 'CONTINUED',
      continuedAs: 'r-1b',
    });
    expect(await h.stores.executions.getExecution('r-1b')).toMatchObject({
      status: 'RUNNING',
      rootThreadId: env.threadId,
      continuedFrom: 'r-1',
    });
    // The next node runs in the new execution as an ordinary step.
    const next = await run(h.deps(), loopStart, resumed as Envelope);
    expect(next).toMatchObject({ executionId: 'r-1b', step: 4, history: 12 });
  });

  it('refuses a second successor, a stale continuation and a fork child, leaving the thread as it is', async () => {
    const env = await atContinuation('r-2');
    await dispatch(resumeEvent('r-2b', env), h.deps());
    const claimed = await h.stores.threads.getThread(env.threadId);

    const twice = await failureOf(dispatch(resumeEvent('r-2c', env), h.deps()));
    expect(twice.message).toContain('CONTINUATION_CONFLICT');
    expect(twice.message).toContain('runs in execution r-2b');

    const other = await atContinuation('r-3');
    const moved = await run(h.deps(), loopStart, other);
    const stale = await failureOf(dispatch(resumeEvent('r-3b', other), h.deps()));
    expect(stale.message).toContain('CONTINUATION_CONFLICT');
    expect((await h.stores.threads.getThread(moved.threadId)).thread.metadata.executionId).toBe('r-3');

    const child = await failureOf(dispatch(resumeEvent('r-2d', { ...env, threadId: 't-child' }), h.deps()));
    expect(child.message).toContain('fork child');
    expect(await h.stores.threads.getThread(env.threadId)).toEqual(claimed);
  });
});
