/**
 * Every expression and template a node evaluates as it runs is checked by validation, so a typo
 * fails `validate` (and `run` before anything runs) rather than the run at that node, after the
 * steps before it (a person's answer included) were spent.
 */
import { describe, expect, it } from 'vitest';
import { validateWorkflow } from '../../../engine/validation/validate.ts';

/** start → `middle` → end, with what `middle` needs declared. */
function around(middle: Record<string, unknown>, extra: Record<string, unknown> = {}) {
  return {
    id: 'typos',
    version: 1,
    variables: [{ name: 'fee', type: 'number', initial: 30 }],
    nodes: [{ id: 'start', type: 'START' }, middle, { id: 'end', type: 'END' }],
    edges: [
      { from: 'start', to: middle.id },
      { from: middle.id, to: 'end' },
    ],
    ...extra,
  };
}

const subgraph = (config: Record<string, unknown>) =>
  around({
    id: 'review',
    type: 'SUBGRAPH',
    config: {
      workflow: {
        id: 'inner',
        version: 1,
        nodes: [
          { id: 'begin', type: 'START' },
          { id: 'finish', type: 'END', config: { output: '{{draft}}' } },
        ],
        edges: [{ from: 'begin', to: 'finish' }],
      },
      ...config,
    },
  });

const codes = (workflow: unknown) =>
  validateWorkflow(workflow).errors.map(({ code, path, nodeId }) => ({ code, path, nodeId }));

describe('expressions a node evaluates as it runs', () => {
  it("reports a CODE node's input that does not parse, at its name", () => {
    const workflow = around({
      id: 'credit',
      type: 'CODE',
      config: { code: 'return input.fee', inputs: { fee: 'input.ticket.monthlyFee +' } },
    });
    const { errors } = validateWorkflow(workflow);
    expect(errors).toEqual([
      {
        code: 'INVALID_EXPRESSION',
        message: expect.stringContaining('Invalid expression "input.ticket.monthlyFee +"'),
        path: 'nodes[1].config.inputs.fee',
        nodeId: 'credit',
      },
    ]);
  });

  it("reports a SUBGRAPH's inputMapping and outputMapping that do not parse", () => {
    expect(codes(subgraph({ inputMapping: { draft: 'fee +' }, outputMapping: { fee: 'output *' } }))).toEqual(
      [
        { code: 'INVALID_EXPRESSION', path: 'nodes[1].config.inputMapping.draft', nodeId: 'review' },
        { code: 'INVALID_EXPRESSION', path: 'nodes[1].config.outputMapping.fee', nodeId: 'review' },
      ],
    );
  });

  it('reports a SUBGRAPH mapping that reads a node no level has, with the id it most likely meant', () => {
    const workflow = subgraph({
      inputMapping: { draft: 'nodes.reviw' },
      outputMapping: { fee: 'nodes.finsh' },
    });
    expect(validateWorkflow(workflow).errors).toEqual([
      {
        code: 'UNKNOWN_NODE_REFERENCE',
        message: 'node review reads nodes.reviw, but no node has that id; did you mean "review"?',
        path: 'nodes[1]',
        nodeId: 'review',
      },
      {
        code: 'UNKNOWN_NODE_REFERENCE',
        message: 'node review reads nodes.finsh, but no node has that id; did you mean "finish"?',
        path: 'nodes[1]',
        nodeId: 'review',
      },
    ]);
    // The child's nodes are known where the outputMapping is read (as the child ends), not before.
    expect(
      codes(subgraph({ inputMapping: { draft: 'fee' }, outputMapping: { fee: 'nodes.finish' } })),
    ).toEqual([]);
    expect(codes(subgraph({ inputMapping: { draft: 'nodes.finish' } }))).toEqual([
      { code: 'UNKNOWN_NODE_REFERENCE', path: 'nodes[1]', nodeId: 'review' },
    ]);
  });

  it("reports a LOOP_START's dataSource template that does not parse or is not closed", () => {
    const loop = (dataSource: string) => ({
      id: 'loops',
      version: 1,
      nodes: [
        { id: 'start', type: 'START' },
        { id: 'each', type: 'LOOP_START', config: { loopId: 'l', dataSource, maxIterations: 5 } },
        { id: 'next', type: 'LOOP_END', config: { loopId: 'l' } },
        { id: 'end', type: 'END' },
      ],
      edges: [
        { from: 'start', to: 'each' },
        { from: 'each', to: 'next' },
        { from: 'next', to: 'end' },
      ],
    });
    expect(codes(loop('{{input.tickets'))).toEqual([
      { code: 'INVALID_EXPRESSION', path: 'nodes[1].config.dataSource', nodeId: 'each' },
    ]);
    expect(codes(loop('{{input.tickets +}}'))).toEqual([
      { code: 'INVALID_EXPRESSION', path: 'nodes[1].config.dataSource', nodeId: 'each' },
    ]);
    expect(codes(loop('{{input.tickets ?? []}}'))).toEqual([]);
  });

  it("reports a FORK's forEach template that does not parse", () => {
    const fork = (forEach: string) => ({
      id: 'each-doc',
      version: 1,
      nodes: [
        { id: 'start', type: 'START' },
        {
          id: 'split',
          type: 'FORK',
          config: { forkPathIds: ['doc'], childNodeIds: ['note'], forEach },
        },
        {
          id: 'note',
          type: 'VARIABLE',
          config: { variableName: 'x', variableType: 'any', expression: 'item' },
        },
        { id: 'merge', type: 'JOIN', config: { forkPathIds: ['doc'], joinStrategy: 'ALL_COMPLETED' } },
        { id: 'end', type: 'END' },
      ],
      edges: [
        { from: 'start', to: 'split' },
        { from: 'note', to: 'merge' },
        { from: 'merge', to: 'end' },
      ],
    });
    expect(codes(fork('{{input.documents +}}'))).toEqual([
      { code: 'INVALID_EXPRESSION', path: 'nodes[1].config.forEach', nodeId: 'split' },
    ]);
    expect(codes(fork('{{input.documents}}'))).toEqual([]);
  });

  it("reports a hook's eventPayload template that does not parse", () => {
    const workflow = around({
      id: 'note',
      type: 'VARIABLE',
      config: { variableName: 'fee', variableType: 'number', expression: 'fee + 1' },
      hooks: [
        { hookType: 'AFTER_EXECUTE', eventName: 'noted', eventPayload: { fee: '{{result.output +}}' } },
      ],
    });
    expect(codes(workflow)).toEqual([
      { code: 'INVALID_EXPRESSION', path: 'nodes[1].hooks[0].eventPayload.fee', nodeId: 'note' },
    ]);
  });
});
