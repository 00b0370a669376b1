/** Fails at `check` when the input's size is over the `limit` variable (1 unless edited): rerun's and copy-start's workflow. */
import type { Workflow } from '../../engine/model/schema.ts';

export const sizeCheck: Workflow = {
  id: 'size-check',
  version: 1,
  variables: [{ name: 'limit', type: 'number', scope: 'thread', initial: 1 }],
  nodes: [
    { id: 'start', type: 'START' },
    {
      id: 'check',
      type: 'CODE',
      config: {
        code: "if (input.size > input.limit) throw new Error('size ' + input.size + ' is over the limit ' + input.limit)\nreturn { accepted: input.size }",
        inputs: { size: 'input.size' },
      },
    },
    { id: 'end', type: 'END', config: { output: '{{nodes.check}}' } },
  ],
  edges: [
    { from: 'start', to: 'check' },
    { from: 'check', to: 'end' },
  ],
};
