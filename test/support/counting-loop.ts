/** LOOP_START → VARIABLE count+1 → LOOP_END, `iterations` times, then END with the count. */
import type { Workflow } from '../../engine/model/schema.ts';

export function countingLoop(iterations: number, id: string): Workflow {
  return {
    id,
    version: 1,
    maxSteps: 100_000,
    variables: [{ name: 'count', type: 'number', scope: 'thread', initial: 0 }],
    nodes: [
      { id: 'start', type: 'START' },
      { id: 'loop', type: 'LOOP_START', config: { loopId: 'l', maxIterations: iterations } },
      {
        id: 'inc',
        type: 'VARIABLE',
        config: { variableName: 'count', variableType: 'number', expression: 'count + 1' },
      },
      { id: 'next', type: 'LOOP_END', config: { loopId: 'l' } },
      { id: 'end', type: 'END', config: { output: { count: '{{count}}' } } },
    ],
    edges: [
      { from: 'start', to: 'loop' },
      { from: 'loop', to: 'inc' },
      { from: 'inc', to: 'next' },
      { from: 'next', to: 'end' },
    ],
  };
}
