import { describe, expect, it } from 'vitest';
import { resourceFor } from '../../engine/asl/index.ts';
import { createLocalRunner } from '../../functions/local/state-machine.ts';

const resource = 'arn:aws:lambda:us-east-1:123456789012:function:stepthread-node';

/** A Task, a Parallel of two branches, a Retry (Flaky) and a Catch (Explode → Recover). */
const definition = {
  StartAt: 'Prepare',
  States: {
    Prepare: { Type: 'Task', Resource: resource, Next: 'Split' },
    Split: {
      Type: 'Parallel',
      Branches: [
        {
          StartAt: 'Flaky',
          States: {
            Flaky: {
              Type: 'Task',
              Resource: resource,
              Retry: [{ ErrorEquals: ['Transient'], IntervalSeconds: 30, MaxAttempts: 2 }],
              End: true,
            },
          },
        },
        {
          StartAt: 'Explode',
          States: {
            Explode: {
              Type: 'Task',
              Resource: resource,
              Catch: [{ ErrorEquals: ['States.ALL'], ResultPath: '$.caught', Next: 'Recover' }],
              End: true,
            },
            Recover: { Type: 'Task', Resource: resource, End: true },
          },
        },
      ],
      Next: 'Finish',
    },
    Finish: { Type: 'Task', Resource: resource, End: true },
  },
};

function handlers() {
  let flakyCalls = 0;
  return {
    Prepare: async (input: unknown) => ({ ...(input as object), prepared: true }),
    Flaky: async (input: unknown) => {
      flakyCalls += 1;
      if (flakyCalls === 1) throw Object.assign(new Error('try again'), { name: 'Transient' });
      return { path: 'a', attempts: flakyCalls, prepared: (input as { prepared: boolean }).prepared };
    },
    Explode: async () => {
      throw Object.assign(new Error('boom'), { name: 'Boom' });
    },
    Recover: async (input: unknown) => ({ path: 'b', recovered: (input as { caught: unknown }).caught }),
    Finish: async (input: unknown) => ({ branches: input }),
  };
}

describe('createLocalRunner', () => {
  const runner = createLocalRunner(definition, handlers());

  it('runs Task, Parallel, Retry and Catch to the expected result', async () => {
    const started = performance.now();
    const execution = runner.start({ ticket: 'T-1' }, { noRetryWaits: true, executionId: 'exec-1' });
    const result = await execution.result;
    // The retrier asks for a 30 s wait: noRetryWaits must remove it.
    expect(performance.now() - started).toBeLessThan(20_000);
    expect(execution.executionId).toBe('exec-1');
    expect(result).toEqual({
      status: 'SUCCEEDED',
      output: {
        branches: [
          { path: 'a', attempts: 2, prepared: true },
          { path: 'b', recovered: { Error: 'Boom', Cause: 'boom' } },
        ],
      },
    });

    const events = execution.events;
    const entered = events.filter((e) => e.type === 'StateEntered').map((e) => e.stateName);
    expect(entered).toEqual(
      expect.arrayContaining(['Prepare', 'Split', 'Flaky', 'Explode', 'Recover', 'Finish']),
    );
    expect(events[0]?.type).toBe('ExecutionStarted');
    expect(events.at(-1)?.type).toBe('ExecutionSucceeded');
    expect(events.filter((e) => e.type === 'ParallelBranchStarted')).toHaveLength(2);
    expect(events.filter((e) => e.type === 'ParallelBranchSucceeded')).toHaveLength(2);
    expect(events.find((e) => e.type === 'StateRetried')).toMatchObject({
      stateName: 'Flaky',
      retryAttempt: 1,
    });
    expect(events.find((e) => e.type === 'StateCaught')).toMatchObject({ stateName: 'Explode' });
    const prepareExit = events.find((e) => e.type === 'StateExited' && e.stateName === 'Prepare');
    expect(prepareExit).toMatchObject({
      stateType: 'Task',
      input: { ticket: 'T-1' },
      output: { ticket: 'T-1', prepared: true },
    });
    expect(Date.parse(prepareExit!.timestamp)).not.toBeNaN();
  });

  it('reports an uncaught failure as FAILED with the error name and cause', async () => {
    const failing = createLocalRunner(
      { StartAt: 'Only', States: { Only: { Type: 'Task', Resource: resource, End: true } } },
      {
        Only: async () => {
          throw Object.assign(new Error('no luck'), { name: 'NodeFailed' });
        },
      },
    );
    const execution = failing.start({});
    expect(await execution.result).toEqual({ status: 'FAILED', error: 'NodeFailed', cause: 'no luck' });
    expect(execution.events.at(-1)).toMatchObject({ type: 'ExecutionFailed', error: 'NodeFailed' });
  });

  it('can be aborted', async () => {
    const hanging = createLocalRunner(
      {
        StartAt: 'Wait',
        States: { Wait: { Type: 'Task', Resource: resource, TimeoutSeconds: 5, End: true } },
      },
      { Wait: () => new Promise(() => {}) },
    );
    const execution = hanging.start({});
    execution.abort();
    expect(await execution.result).toEqual({ status: 'ABORTED' });
  });

  it('refuses a definition with a Task that has no local handler, or an invalid definition', () => {
    expect(() => createLocalRunner(definition, { Prepare: async () => ({}) })).toThrow(
      expect.objectContaining({ code: 'INVALID_STATE_MACHINE', message: expect.stringContaining('Flaky') }),
    );
    expect(() =>
      createLocalRunner({ StartAt: 'Nowhere', States: { A: { Type: 'Pass', End: true } } }, {}),
    ).toThrow(expect.objectContaining({ code: 'INVALID_STATE_MACHINE' }));
  });

  it('lists every Task state, including those inside branches', () => {
    expect([...runner.taskStates].sort()).toEqual(['Explode', 'Finish', 'Flaky', 'Prepare', 'Recover']);
  });
});

describe('compiled definitions', () => {
  it('accepts Fn_<TYPE> placeholder resources and resolves $$.Task.Token for waitForTaskToken Tasks', async () => {
    const waiting = {
      StartAt: 'Ask',
      States: {
        Ask: {
          Type: 'Task',
          Resource: 'arn:aws:states:::lambda:invoke.waitForTaskToken',
          Parameters: {
            FunctionName: resourceFor('USER_INTERACTION'),
            Payload: { 'envelope.$': '$', 'taskToken.$': '$$.Task.Token' },
          },
          TimeoutSeconds: 60,
          Next: 'Done',
        },
        Done: { Type: 'Task', Resource: resourceFor('END'), Parameters: { 'envelope.$': '$' }, End: true },
      },
    };
    const seen: unknown[] = [];
    const runner = createLocalRunner(waiting, {
      Ask: async (input) => {
        seen.push(input);
        return { answered: true };
      },
      Done: async (input) => input,
    });
    const execution = runner.start({ step: 1 }, { executionId: 'exec-w' });
    expect(await execution.result).toEqual({ status: 'SUCCEEDED', output: { envelope: { answered: true } } });
    expect(seen).toEqual([
      {
        FunctionName: resourceFor('USER_INTERACTION'),
        Payload: { envelope: { step: 1 }, taskToken: 'local-token:exec-w' },
      },
    ]);
  });
});
