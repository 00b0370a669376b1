/** The alignment `diff` makes (pure): by node and occurrence, where two step sequences part, shared copy prefixes. */
import { describe, expect, it } from 'vitest';
import {
  alignByOccurrence,
  differingSteps,
  partingOf,
  type StepDigest,
  sharedPositions,
} from '../../engine/thread/step-alignment.ts';

const steps = (...specs: string[]): StepDigest[] =>
  specs.map((spec, i) => {
    const [nodeId, hash = 'same'] = spec.split('=');
    return {
      nodeId: nodeId!,
      nodeType: 'CODE',
      status: 'COMPLETED',
      step: i + 1,
      position: i + 1,
      threadId: 't',
      hash,
    };
  });

describe('thread diff alignment', () => {
  it('parts where another node runs, yet pairs later runs of each node by occurrence', () => {
    const a = steps('start', 'x', 'y', 'end');
    const b = steps('start', 'z', 'x', 'y=other', 'end');
    expect(partingOf(a, b)).toMatchObject({
      reason: 'path',
      position: 2,
      a: { nodeId: 'x' },
      b: { nodeId: 'z' },
    });
    const differing = differingSteps(alignByOccurrence(a, b));
    expect(
      differing.map(({ nodeId, occurrence, a: left, b: right }) => [nodeId, occurrence, !!left, !!right]),
    ).toEqual([
      ['y', 1, true, true],
      ['z', 1, false, true],
    ]);
  });

  it('one side longer parts at its first extra step; alike sequences do not part', () => {
    expect(partingOf(steps('a', 'b'), steps('a', 'b', 'b'))).toMatchObject({
      reason: 'onlyB',
      position: 3,
      occurrenceB: 2,
    });
    expect(partingOf(steps('a', 'b'), steps('a', 'b'))).toBeUndefined();
  });

  it('a copy shares its source segment up to the copy point', () => {
    expect(
      sharedPositions(
        [{ threadId: 's', steps: 7 }],
        [
          { threadId: 's', steps: 3 },
          { threadId: 'c', steps: 4 },
        ],
      ),
    ).toBe(3);
    expect(sharedPositions([{ threadId: 's', steps: 7 }], [{ threadId: 't', steps: 7 }])).toBe(0);
  });
});
