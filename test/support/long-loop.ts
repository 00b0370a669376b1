/**
 * A long run in few lines: START, count × (LOOP_START, VARIABLE, LOOP_END), the exit LOOP_START, END
 * — 3 × count + 3 steps, `count` from the input (`{"count": 1500}` is 4,503 steps).
 */
export const longLoop = {
  id: 'long',
  version: 1,
  maxSteps: 100000,
  variables: [{ name: 'n', type: 'number', scope: 'thread', initial: 0 }],
  nodes: [
    { id: 'start', type: 'START' },
    {
      id: 'loop',
      type: 'LOOP_START',
      config: { loopId: 'l', dataSource: '{{input.count}}', maxIterations: 100000 },
    },
    {
      id: 'inc',
      type: 'VARIABLE',
      config: { variableName: 'n', variableType: 'number', expression: 'n + 1' },
    },
    { id: 'lend', type: 'LOOP_END', config: { loopId: 'l' } },
    { id: 'end', type: 'END', config: { output: { n: '{{n}}' } } },
  ],
  edges: [
    { from: 'start', to: 'loop' },
    { from: 'loop', to: 'inc' },
    { from: 'inc', to: 'lend' },
    { from: 'lend', to: 'end' },
  ],
};
