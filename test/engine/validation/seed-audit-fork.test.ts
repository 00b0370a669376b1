/**
 * Seed 001 §2 (validation rules), §6 (validation tests) and §7 (validation error codes), one case per
 * rule, each asserting the code, the node and the path it names.
 */
import { describe, expect, it } from 'vitest';
import { validateWorkflow } from '../../../engine/validation/validate.ts';

interface Shape {
  forkPathIds?: unknown;
  childNodeIds?: string[];
  join?: Record<string, unknown>;
}

const step = (id: string) => ({ id, type: 'CODE', config: { code: 'return 1;' } });

/** start → split (FORK over a, b) → a-work | b-work → merge (JOIN) → end. */
function forkJoin(shape: Shape = {}) {
  const childNodeIds = shape.childNodeIds ?? ['a-work', 'b-work'];
  return {
    id: 'audit',
    version: 1,
    nodes: [
      { id: 'start', type: 'START' },
      {
        id: 'split',
        type: 'FORK',
        config: { forkPathIds: shape.forkPathIds ?? ['a', 'b'], forkStrategy: 'parallel', childNodeIds },
      },
      step('a-work'),
      step('b-work'),
      {
        id: 'merge',
        type: 'JOIN',
        config: { forkPathIds: ['a', 'b'], joinStrategy: 'ALL_COMPLETED', ...(shape.join ?? {}) },
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

const errorsOf = (workflow: unknown) => validateWorkflow(workflow).errors;

describe('seed 001 §2: FORK rules', () => {
  it('a well-formed fork/join is valid (the baseline the cases below break)', () => {
    expect(errorsOf(forkJoin())).toEqual([]);
  });

  it('forkPathIds must be a non-empty array', () => {
    expect(errorsOf(forkJoin({ forkPathIds: [], join: { forkPathIds: [] } }))).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          code: 'INVALID_FORK_PATH_IDS',
          nodeId: 'split',
          path: 'nodes[1].config.forkPathIds',
        }),
        expect.objectContaining({
          code: 'INVALID_FORK_PATH_IDS',
          nodeId: 'merge',
          path: 'nodes[4].config.forkPathIds',
        }),
      ]),
    );
    // Not an array at all: refused by the schema, naming the field.
    expect(errorsOf(forkJoin({ forkPathIds: 'a' }))[0]).toMatchObject({
      nodeId: 'split',
      path: 'nodes[1].config.forkPathIds',
    });
  });

  it('childNodeIds must be a non-empty array', () => {
    const errors = errorsOf(forkJoin({ childNodeIds: [] }));
    expect(errors).toContainEqual(
      expect.objectContaining({
        code: 'INVALID_FORK_PATH_IDS',
        nodeId: 'split',
        path: 'nodes[1].config.childNodeIds',
      }),
    );
  });

  it('forkPathIds and childNodeIds have the same length', () => {
    const errors = errorsOf(
      forkJoin({ forkPathIds: ['a', 'b', 'c'], join: { forkPathIds: ['a', 'b', 'c'] } }),
    );
    const mismatch = errors.find((error) => error.code === 'INVALID_FORK_PATH_IDS');
    expect(mismatch).toMatchObject({ nodeId: 'split', path: 'nodes[1].config.forkPathIds' });
    expect(mismatch?.message).toMatch(/3 entries but childNodeIds has 2/);
    // The mismatch is not echoed as a FORK_JOIN_MISMATCH.
    expect(errors.map((error) => error.code)).not.toContain('FORK_JOIN_MISMATCH');
  });

  it('a path id is unique within the FORK', () => {
    const errors = errorsOf(forkJoin({ forkPathIds: ['a', 'a'], join: { forkPathIds: ['a', 'a'] } }));
    expect(errors).toContainEqual(
      expect.objectContaining({
        code: 'INVALID_FORK_PATH_IDS',
        nodeId: 'split',
        path: 'nodes[1].config.forkPathIds[1]',
      }),
    );
  });

  it('a path id is unique within a workflow definition: two FORKs of one SUBGRAPH may not share one', () => {
    const inner = {
      ...forkJoin(),
      nodes: [
        ...forkJoin().nodes.filter((node) => node.type !== 'END'),
        {
          id: 'split2',
          type: 'FORK',
          config: { forkPathIds: ['b', 'c'], forkStrategy: 'serial', childNodeIds: ['b2', 'c2'] },
        },
        step('b2'),
        step('c2'),
        { id: 'merge2', type: 'JOIN', config: { forkPathIds: ['b', 'c'], joinStrategy: 'ALL_COMPLETED' } },
        { id: 'end', type: 'END' },
      ],
      edges: [
        ...forkJoin().edges.filter((edge) => edge.to !== 'end'),
        { from: 'merge', to: 'split2' },
        { from: 'b2', to: 'merge2' },
        { from: 'c2', to: 'merge2' },
        { from: 'merge2', to: 'end' },
      ],
    };
    const outer = {
      id: 'outer',
      version: 1,
      nodes: [
        { id: 'start', type: 'START' },
        { id: 'sub', type: 'SUBGRAPH', config: { workflow: inner } },
        { id: 'end', type: 'END' },
      ],
      edges: [
        { from: 'start', to: 'sub' },
        { from: 'sub', to: 'end' },
      ],
    };
    const errors = errorsOf(outer);
    expect(errors).toEqual([
      expect.objectContaining({
        code: 'INVALID_FORK_PATH_IDS',
        nodeId: 'split2',
        path: 'nodes[1].config.workflow.nodes[5].config.forkPathIds[0]',
        message: expect.stringContaining('already used by FORK "split"'),
      }),
    ]);
  });

  it('a SUBGRAPH is its own definition: it may reuse its parent’s path ids (the build makes them globally unique)', () => {
    const parent = forkJoin();
    const outer = {
      ...parent,
      nodes: [
        ...parent.nodes.slice(0, 5),
        { id: 'sub', type: 'SUBGRAPH', config: { workflow: forkJoin() } },
        parent.nodes[5],
      ],
      edges: [
        ...parent.edges.filter((edge) => edge.to !== 'end'),
        { from: 'merge', to: 'sub' },
        { from: 'sub', to: 'end' },
      ],
    };
    expect(errorsOf(outer)).toEqual([]);
  });
});

describe('seed 001 §2: JOIN rules', () => {
  it('mainPathId, when given, is one of forkPathIds', () => {
    expect(errorsOf(forkJoin({ join: { mainPathId: 'b' } }))).toEqual([]);
    expect(errorsOf(forkJoin({ join: { mainPathId: 'c' } }))).toEqual([
      expect.objectContaining({
        code: 'MAIN_PATH_ID_NOT_FOUND',
        nodeId: 'merge',
        path: 'nodes[4].config.mainPathId',
        message: 'mainPathId "c" is not one of forkPathIds [a, b]',
      }),
    ]);
  });

  for (const [what, joinIds] of [
    ['another order', ['b', 'a']],
    ['another id', ['a', 'c']],
    ['one path fewer', ['a']],
    ['one path more', ['a', 'b', 'c']],
  ] as const) {
    it(`forkPathIds identical to its FORK's: ${what} is FORK_JOIN_MISMATCH`, () => {
      const errors = errorsOf(forkJoin({ join: { forkPathIds: joinIds } }));
      expect(errors).toContainEqual(
        expect.objectContaining({
          code: 'FORK_JOIN_MISMATCH',
          nodeId: 'merge',
          message: expect.stringContaining(`[${joinIds.join(', ')}]`),
        }),
      );
    });
  }

  it('SUCCESS_COUNT_THRESHOLD needs an integer threshold between 1 and the number of paths', () => {
    const threshold = (value?: number) =>
      errorsOf(
        forkJoin({
          join: {
            joinStrategy: 'SUCCESS_COUNT_THRESHOLD',
            ...(value === undefined ? {} : { threshold: value }),
          },
        }),
      ).map((error) => error.code);
    expect(threshold()).toEqual(['INVALID_JOIN_THRESHOLD']);
    expect(threshold(0)).toEqual(['INVALID_JOIN_THRESHOLD']);
    expect(threshold(1)).toEqual([]);
    expect(threshold(2)).toEqual([]);
    expect(threshold(3)).toEqual(['INVALID_JOIN_THRESHOLD']);
    expect(threshold(1.5).length).toBeGreaterThan(0);
  });

  it('timeout is seconds: 0 (wait forever) or a whole positive number; negative or a fraction is INVALID_JOIN_TIMEOUT', () => {
    expect(errorsOf(forkJoin({ join: { timeout: 0 } }))).toEqual([]);
    expect(errorsOf(forkJoin({ join: { timeout: 30 } }))).toEqual([]);
    for (const timeout of [-1, 0.2, 1.5]) {
      const errors = errorsOf(forkJoin({ join: { timeout } }));
      expect(
        errors.map((error) => error.code),
        String(timeout),
      ).toEqual(['INVALID_JOIN_TIMEOUT']);
    }
    // A Wait state counts whole seconds: 0.2 s would have been waited as 1 s.
    expect(errorsOf(forkJoin({ join: { timeout: 0.2 } }))[0]!.message).toMatch(
      /whole number of seconds, got 0.2/,
    );
  });

  it('every strategy the seed lists is accepted, and nothing else', () => {
    for (const joinStrategy of ['ALL_COMPLETED', 'ANY_COMPLETED', 'ALL_FAILED', 'ANY_FAILED']) {
      expect(errorsOf(forkJoin({ join: { joinStrategy } })), joinStrategy).toEqual([]);
    }
    expect(errorsOf(forkJoin({ join: { joinStrategy: 'MAJORITY' } })).length).toBeGreaterThan(0);
  });

  it('forkStrategy is serial or parallel', () => {
    const workflow = forkJoin();
    const withStrategy = (forkStrategy: string) => ({
      ...workflow,
      nodes: workflow.nodes.map((node) =>
        node.type === 'FORK' ? { ...node, config: { ...node.config, forkStrategy } } : node,
      ),
    });
    expect(errorsOf(withStrategy('serial'))).toEqual([]);
    expect(errorsOf(withStrategy('parallel'))).toEqual([]);
    expect(errorsOf(withStrategy('random')).length).toBeGreaterThan(0);
  });
});

describe('seed 001 §5/§6: the old `forkId` format', () => {
  it('is not taken (no backward compatibility, §5): a clear INVALID_FORK_PATH_IDS on the FORK and the JOIN', () => {
    const workflow = forkJoin();
    const old = {
      ...workflow,
      nodes: workflow.nodes.map((node) => {
        if (node.type === 'FORK')
          return {
            ...node,
            config: { forkId: 'f1', forkStrategy: 'parallel', childNodeIds: ['a-work', 'b-work'] },
          };
        if (node.type === 'JOIN') return { ...node, config: { forkId: 'f1', joinStrategy: 'ALL_COMPLETED' } };
        return node;
      }),
    };
    expect(errorsOf(old)).toEqual([
      expect.objectContaining({
        code: 'INVALID_FORK_PATH_IDS',
        nodeId: 'split',
        message: expect.stringContaining(
          'forkPathIds is required: one path id per childNodeIds entry; "forkId" (the old format) is not supported',
        ),
      }),
      expect.objectContaining({
        code: 'INVALID_FORK_PATH_IDS',
        nodeId: 'merge',
        message: expect.stringContaining(
          'forkPathIds is required: the path ids of its FORK, in the same order',
        ),
      }),
    ]);
  });

  it('mixed with forkPathIds (§6) is refused too, saying forkId is the old format', () => {
    const workflow = forkJoin();
    const mixed = {
      ...workflow,
      nodes: workflow.nodes.map((node) =>
        node.type === 'FORK' || node.type === 'JOIN'
          ? { ...node, config: { ...node.config, forkId: 'f1' } }
          : node,
      ),
    };
    const hint = expect.stringMatching(
      /config\.forkId: unknown key "forkId" here: "forkId" is the seed SDK's old format, which forkPathIds replaces$/,
    );
    expect(errorsOf(mixed)).toEqual([
      expect.objectContaining({ code: 'UNKNOWN_KEY', nodeId: 'split', message: hint }),
      expect.objectContaining({ code: 'UNKNOWN_KEY', nodeId: 'merge', message: hint }),
    ]);
  });
});
