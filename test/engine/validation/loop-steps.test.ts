import { describe, expect, it } from 'vitest';
import { validateWorkflow } from '../../../engine/validation/validate.ts';

type Node = { id: string; type: string; config?: Record<string, unknown> };

/** START → LOOP_START → `body` (a chain of VARIABLE nodes unless given) → LOOP_END → END. */
function loopWorkflow(
  loopConfig: Record<string, unknown>,
  options: {
    bodyLength?: number;
    body?: Node[];
    edges?: Array<{ from: string; to: string }>;
    extra?: object;
  } = {},
) {
  const body =
    options.body ??
    Array.from({ length: options.bodyLength ?? 4 }, (_, index) => ({
      id: `b${index}`,
      type: 'VARIABLE',
      config: { variableName: 'n', variableType: 'number', expression: 'n + 1' },
    }));
  const chain = ['loop', ...body.map(({ id }) => id), 'next'];
  return {
    id: 'steps',
    version: 1,
    variables: [{ name: 'n', type: 'number', initial: 0 }],
    ...options.extra,
    nodes: [
      { id: 'start', type: 'START' },
      { id: 'loop', type: 'LOOP_START', config: { loopId: 'l', maxIterations: 10_000, ...loopConfig } },
      ...body,
      { id: 'next', type: 'LOOP_END', config: { loopId: 'l' } },
      { id: 'end', type: 'END' },
    ],
    edges: options.edges ?? [
      { from: 'start', to: 'loop' },
      ...chain.slice(1).map((to, index) => ({ from: chain[index]!, to })),
      { from: 'next', to: 'end' },
    ],
  };
}

const stepErrors = (data: unknown) =>
  validateWorkflow(data).errors.filter(({ code }) => code === 'MAX_STEPS_EXCEEDED');

describe('a loop that can never fit in maxSteps', () => {
  it('is refused when its fixed count of iterations runs past the default maxSteps, with the numbers', () => {
    // 300 × (LOOP_START + 4 + LOOP_END) + the exit LOOP_START + START + END.
    expect(validateWorkflow(loopWorkflow({ dataSource: 300 })).errors).toEqual([
      {
        code: 'MAX_STEPS_EXCEEDED',
        nodeId: 'loop',
        path: 'nodes[1]',
        message:
          'loop "l" always runs 300 iterations of at least 6 node executions (LOOP_START, the body, LOOP_END), so every run needs at least 1803 steps counting START and END, but maxSteps is 1000 (the default): set "maxSteps" at the top of the workflow file to at least 1803, or make the loop shorter (dataSource, maxIterations, or a breakCondition on its LOOP_END)',
      },
    ]);
  });

  it("counts against the workflow's own maxSteps, and accepts it from the step count on", () => {
    const at = (maxSteps: number) => stepErrors(loopWorkflow({ dataSource: 300 }, { extra: { maxSteps } }));
    expect(at(1802)).toEqual([
      expect.objectContaining({ message: expect.stringMatching(/at least 1803 steps .* maxSteps is 1802:/) }),
    ]);
    expect(at(1803)).toEqual([]);
  });

  it('reads every literal dataSource, and a missing one as maxIterations iterations', () => {
    const refused = (config: Record<string, unknown>) =>
      stepErrors(loopWorkflow(config, { bodyLength: 1, extra: { maxSteps: 20 } })).length;
    // 6 iterations of 3 steps: 18 + 1 + 2 = 21 > 20; 5 of them: 18 fits.
    expect(refused({ dataSource: [1, 2, 3, 4, 5, 6] })).toBe(1);
    expect(refused({ dataSource: 'abcdé😀' })).toBe(1);
    expect(refused({ dataSource: { a: 1, b: 2, c: 3, d: 4, e: 5, f: 6 } })).toBe(1);
    expect(refused({ maxIterations: 6 })).toBe(1);
    expect(refused({ dataSource: null, maxIterations: 6 })).toBe(1);
    expect(refused({ dataSource: 5 })).toBe(0);
    expect(refused({ dataSource: 600, maxIterations: 5 })).toBe(0);
  });

  it('accepts what might fit: a count from the input, a breakCondition, a ROUTE out to END', () => {
    expect(stepErrors(loopWorkflow({ dataSource: '{{input.count}}' }))).toEqual([]);
    const withBreak = loopWorkflow({ dataSource: 300 });
    withBreak.nodes[6] = { id: 'next', type: 'LOOP_END', config: { loopId: 'l', breakCondition: 'n > 3' } };
    expect(validateWorkflow(withBreak).errors).toEqual([]);
    const routeOut = loopWorkflow(
      { dataSource: 300 },
      {
        body: [
          {
            id: 'check',
            type: 'ROUTE',
            config: { routes: [{ condition: 'n > 3', targetNodeId: 'end' }], defaultTargetNodeId: 'next' },
          },
        ],
        edges: [
          { from: 'start', to: 'loop' },
          { from: 'loop', to: 'check' },
          { from: 'next', to: 'end' },
        ],
      },
    );
    expect(validateWorkflow(routeOut).errors).toEqual([]);
  });

  it('takes the shortest way through the body, and a FORK as its FORK and JOIN', () => {
    const body: Node[] = [
      {
        id: 'check',
        type: 'ROUTE',
        config: { routes: [{ condition: 'n > 3', targetNodeId: 'long' }], defaultTargetNodeId: 'split' },
      },
      {
        id: 'long',
        type: 'VARIABLE',
        config: { variableName: 'n', variableType: 'number', expression: 'n' },
      },
      {
        id: 'longer',
        type: 'VARIABLE',
        config: { variableName: 'n', variableType: 'number', expression: 'n' },
      },
      {
        id: 'split',
        type: 'FORK',
        config: { forkPathIds: ['a', 'b'], forkStrategy: 'parallel', childNodeIds: ['a1', 'b1'] },
      },
      { id: 'a1', type: 'VARIABLE', config: { variableName: 'x', variableType: 'number', expression: '1' } },
      { id: 'a2', type: 'VARIABLE', config: { variableName: 'x', variableType: 'number', expression: '1' } },
      { id: 'b1', type: 'VARIABLE', config: { variableName: 'y', variableType: 'number', expression: '1' } },
      { id: 'merge', type: 'JOIN', config: { forkPathIds: ['a', 'b'], joinStrategy: 'ALL_COMPLETED' } },
    ];
    const edges = [
      { from: 'start', to: 'loop' },
      { from: 'loop', to: 'check' },
      { from: 'long', to: 'longer' },
      { from: 'longer', to: 'next' },
      { from: 'a1', to: 'a2' },
      { from: 'a2', to: 'merge' },
      { from: 'b1', to: 'merge' },
      { from: 'merge', to: 'next' },
      { from: 'next', to: 'end' },
    ];
    // Either way through the body is 3 nodes (ROUTE + 2, or ROUTE, FORK, JOIN): 5 steps an iteration.
    const errors = stepErrors(loopWorkflow({ dataSource: 200 }, { body, edges }));
    expect(errors).toEqual([
      expect.objectContaining({
        message: expect.stringMatching(/200 iterations of at least 5 .* at least 1003 steps/),
      }),
    ]);
  });

  it('multiplies a nested loop of fixed length into its outer loop', () => {
    const body: Node[] = [
      { id: 'inner', type: 'LOOP_START', config: { loopId: 'i', dataSource: 20, maxIterations: 100 } },
      {
        id: 'inc',
        type: 'VARIABLE',
        config: { variableName: 'n', variableType: 'number', expression: 'n + 1' },
      },
      { id: 'inner-next', type: 'LOOP_END', config: { loopId: 'i' } },
    ];
    const edges = [
      { from: 'start', to: 'loop' },
      { from: 'loop', to: 'inner' },
      { from: 'inner', to: 'inc' },
      { from: 'inc', to: 'inner-next' },
      { from: 'inner-next', to: 'next' },
      { from: 'next', to: 'end' },
    ];
    // Inner: 20 × 3 + 1 = 61 steps; outer: 20 × (2 + 61) + 1 + START + END = 1263.
    expect(stepErrors(loopWorkflow({ dataSource: 20 }, { body, edges }))).toEqual([
      expect.objectContaining({
        nodeId: 'loop',
        message: expect.stringMatching(/at least 63 .* at least 1263 steps/),
      }),
    ]);
    expect(stepErrors(loopWorkflow({ dataSource: 20 }, { body, edges, extra: { maxSteps: 1263 } }))).toEqual(
      [],
    );
  });
});
