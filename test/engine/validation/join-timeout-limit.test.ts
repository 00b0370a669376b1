/**
 * A JOIN timeout longer than a STANDARD execution can run (one year) would never fire: the execution
 * ends first. validate refuses it with INVALID_JOIN_TIMEOUT, as it refuses such an interaction timeout.
 */
import { describe, expect, it } from 'vitest';
import { validateWorkflow } from '../../../engine/validation/validate.ts';

const YEAR = 31_536_000;

function joinWaiting(timeout: number) {
  return {
    id: 'slow-join',
    version: 1,
    nodes: [
      { id: 'start', type: 'START' },
      {
        id: 'split',
        type: 'FORK',
        config: { forkPathIds: ['a', 'b'], forkStrategy: 'parallel', childNodeIds: ['a-work', 'b-work'] },
      },
      { id: 'a-work', type: 'CODE', config: { code: 'return 1;' } },
      { id: 'b-work', type: 'CODE', config: { code: 'return 2;' } },
      {
        id: 'merge',
        type: 'JOIN',
        config: { forkPathIds: ['a', 'b'], joinStrategy: 'ALL_COMPLETED', timeout },
      },
      { id: 'end', type: 'END' },
    ],
    edges: [
      { from: 'start', to: 'split' },
      { from: 'a-work', to: 'merge' },
      { from: 'b-work', to: 'merge' },
      { from: 'merge', to: 'end' },
    ],
  };
}

describe('a JOIN timeout', () => {
  it('may be up to one year, the longest a STANDARD execution runs', () => {
    expect(validateWorkflow(joinWaiting(YEAR)).errors).toEqual([]);
  });

  it('over one year could never fire: INVALID_JOIN_TIMEOUT, naming the limit and the node', () => {
    const { errors } = validateWorkflow(joinWaiting(YEAR + 1));
    expect(errors).toEqual([
      expect.objectContaining({
        code: 'INVALID_JOIN_TIMEOUT',
        nodeId: 'merge',
        message: expect.stringContaining('at most 31,536,000 seconds (one year'),
      }),
    ]);
  });
});
