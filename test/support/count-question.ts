/** START → `ask` (ask_for_input into `count`, declared number) → END with `{count}`: an answer the type bounds. */
export const COUNT_QUESTION = {
  id: 'count-ask',
  version: 1,
  variables: [{ name: 'count', type: 'number', scope: 'thread', initial: 0 }],
  nodes: [
    { id: 'start', type: 'START' },
    {
      id: 'ask',
      type: 'USER_INTERACTION',
      config: { userInteractionType: 'ask_for_input', showMessage: 'How many?', outputVariable: 'count' },
    },
    { id: 'end', type: 'END', config: { output: { count: '{{count}}' } } },
  ],
  edges: [
    { from: 'start', to: 'ask' },
    { from: 'ask', to: 'end' },
  ],
};
