/**
 * Task timeouts in the local runner as on AWS: a Task without TimeoutSeconds waits (Step Functions'
 * default is 99,999,999 s), where aws-local-stepfunctions alone fails it after 60 s.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { AslDefinition, AslStateMachine } from '../../../engine/asl/index.ts';
import { compileWorkflow } from '../../../engine/asl/index.ts';
import { validateWorkflow } from '../../../engine/validation/validate.ts';
import { LOCAL_TASK_TIMEOUT_SECONDS, withAwsTaskTimeouts } from '../../../functions/local/definition.ts';
import { createLocalRunner } from '../../../functions/local/state-machine.ts';

const ROOT = join(import.meta.dirname, '..', '..', '..');
const resource = 'arn:aws:lambda:us-east-1:123456789012:function:stepthread-node';

function compiledExample(name: string): AslDefinition {
  const { workflow } = validateWorkflow(
    JSON.parse(readFileSync(join(ROOT, 'examples', `${name}.json`), 'utf8')),
  );
  return compileWorkflow(workflow!).definition;
}

/** Every Task state's timeout, by state name, branches and Map items included. */
function taskTimeouts(machine: AslStateMachine, into: Record<string, unknown> = {}): Record<string, unknown> {
  for (const [name, state] of Object.entries(machine.States)) {
    if (state.Type === 'Parallel') for (const branch of state.Branches) taskTimeouts(branch, into);
    if (state.Type === 'Map') taskTimeouts(state.ItemProcessor, into);
    if (state.Type === 'Task') into[name] = (state as { TimeoutSeconds?: number }).TimeoutSeconds;
  }
  return into;
}

afterEach(() => {
  vi.useRealTimers();
});

describe('local Task timeouts', () => {
  it('gives every Task without a timeout the longest the runner can keep, and keeps the ones set', () => {
    expect(LOCAL_TASK_TIMEOUT_SECONDS * 1000).toBeLessThanOrEqual(2 ** 31 - 1);
    for (const name of ['fork-join-research', 'map-reduce', 'support-triage']) {
      const compiled = compiledExample(name);
      const before = taskTimeouts(compiled);
      const after = taskTimeouts(withAwsTaskTimeouts(compiled));
      expect(Object.keys(after)).toEqual(Object.keys(before));
      for (const [state, timeout] of Object.entries(before)) {
        expect(after[state]).toBe(timeout ?? LOCAL_TASK_TIMEOUT_SECONDS);
      }
      // The compiled definition itself (what AWS runs) is left as it was.
      expect(taskTimeouts(compiled)).toEqual(before);
    }
    const asked = taskTimeouts(withAwsTaskTimeouts(compiledExample('support-triage')));
    expect(asked['approve-credit']).toBe(86_400);
  });

  it('lets a Task run past 60 s, which the runner alone fails with States.Timeout', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const definition = { StartAt: 'Slow', States: { Slow: { Type: 'Task', Resource: resource, End: true } } };
    const outcomes: unknown[] = [];
    for (const machine of [definition, withAwsTaskTimeouts(definition as unknown as AslDefinition)]) {
      let finish: (value: unknown) => void = () => {};
      const runner = createLocalRunner(machine, {
        Slow: () =>
          new Promise((resolve) => {
            finish = resolve;
          }),
      });
      const execution = runner.start({});
      await vi.advanceTimersByTimeAsync(61_000);
      finish({ done: true });
      outcomes.push(await execution.result);
    }
    expect(outcomes).toEqual([
      { status: 'FAILED', error: 'States.Timeout', cause: expect.any(String) },
      { status: 'SUCCEEDED', output: { done: true } },
    ]);
  });
});
