/** `run`'s progress lines, from the local runtime's state events as aws-local-stepfunctions sends them. */
import { describe, expect, it } from 'vitest';
import { progressPrinter } from '../../cli/commands/run.ts';
import { ASL_ERRORS } from '../../engine/asl/task-input.ts';
import type { LocalEvent, LocalEventType } from '../../functions/local/state-machine.ts';

function printed(events: readonly [LocalEventType, string, string, Partial<LocalEvent>?][]): string[] {
  let out = '';
  const print = progressPrinter({
    stdout: () => {},
    stderr: (text) => {
      out += text;
    },
    readFile: async () => '',
  });
  events.forEach(([type, stateName, stateType, rest], i) => {
    print({
      type,
      stateName,
      stateType,
      timestamp: new Date(Date.UTC(2026, 0, 1, 0, 0, 0, i)).toISOString(),
      ...rest,
    });
  });
  return out.split('\n').filter(Boolean);
}

describe('run progress', () => {
  it('a failure a Catch takes shows once, as ✗, not also as ✓ when the state exits to its Catch', () => {
    expect(
      printed([
        ['StateEntered', 'ask', 'Task'],
        [
          'StateFailed',
          'ask',
          'Task',
          {
            error: 'stepthread.NodeFailed',
            cause: JSON.stringify({
              code: 'LLM_PROVIDER_ERROR',
              message: 'node ask: 503\nretry later',
              nodeId: 'ask',
            }),
          },
        ],
        ['StateCaught', 'ask', 'Task'],
        ['StateExited', 'ask', 'Task'],
        ['StateEntered', 'stepthread:fail', 'Task'],
        ['StateExited', 'stepthread:fail', 'Task'],
      ]),
    ).toEqual([
      '  → ask',
      // The node's coded error, on one line (the code was only in the run's last line).
      '  ✗ ask (1 ms): LLM_PROVIDER_ERROR: node ask: 503',
      // The task that records the failure is not shown: its ✓ read as if something succeeded.
    ]);
  });

  it('a failure retried, then a success: ✗, ↻ and ✓', () => {
    expect(
      printed([
        ['StateEntered', 'llm', 'Task'],
        ['StateFailed', 'llm', 'Task', { error: 'Lambda.ServiceException' }],
        ['StateRetried', 'llm', 'Task', { retryAttempt: 1 }],
        ['StateExited', 'llm', 'Task'],
      ]),
    ).toEqual(['  → llm', '  ✗ llm (1 ms): Lambda.ServiceException', '  ↻ llm: retry 1', '  ✓ llm (3 ms)']);
  });

  it('a join decided ends the branch (⇥) and the Parallel (✓) by design, not as failures', () => {
    expect(
      printed([
        ['StateEntered', 'split:paths', 'Parallel'],
        ['StateEntered', 'merge:b', 'Task'],
        ['StateFailed', 'merge:b', 'Task', { error: ASL_ERRORS.joinDecided }],
        ['StateFailed', 'split:paths', 'Parallel', { error: ASL_ERRORS.joinDecided }],
        ['StateCaught', 'split:paths', 'Parallel'],
        ['StateExited', 'split:paths', 'Parallel'],
      ]),
    ).toEqual([
      '  → split:paths',
      '  → merge:b',
      '  ⇥ merge:b (1 ms): join decided',
      '  ✓ split:paths (5 ms)',
    ]);
  });
});
