/**
 * What validate refuses because it could not compile or run (issue 14 items 5 and 6, issue 11 item 6):
 * ids that cannot be state names or that collide with object prototypes, nesting of any depth (coded,
 * never a RangeError), and definitions over Step Functions' 1 MiB.
 */
import { describe, expect, it } from 'vitest';
import { compileProblems, compileWorkflow } from '../../../engine/asl/index.ts';
import type { Workflow } from '../../../engine/model/schema.ts';
import { MAX_SUBGRAPH_NESTING, MAX_WORKFLOW_DEPTH } from '../../../engine/validation/limits.ts';
import { validateWorkflow } from '../../../engine/validation/validate.ts';

function chain(id: string, middle: Record<string, unknown>[] = []): Record<string, unknown> {
  const nodes = [{ id: 'start', type: 'START' }, ...middle, { id: 'end', type: 'END' }];
  return {
    id,
    version: 1,
    nodes,
    edges: nodes.slice(1).map((node, i) => ({ from: nodes[i]!.id, to: node.id })),
  };
}

function fork(forkId: string, pathIds: string[], joinId = 'merge'): Record<string, unknown> {
  const children = pathIds.map((_, i) => ({ id: `c${i}` }));
  const nodes = [
    { id: 'start', type: 'START' },
    {
      id: forkId,
      type: 'FORK',
      config: { forkPathIds: pathIds, forkStrategy: 'serial', childNodeIds: children.map((c) => c.id) },
    },
    ...children.map((c) => ({
      id: c.id,
      type: 'VARIABLE',
      config: { variableName: 'v', variableType: 'number', expression: '1' },
    })),
    { id: joinId, type: 'JOIN', config: { forkPathIds: pathIds, joinStrategy: 'ALL_COMPLETED', timeout: 0 } },
    { id: 'end', type: 'END' },
  ];
  return {
    id: 'fork',
    version: 1,
    variables: [{ name: 'v', type: 'number', scope: 'thread', initial: 0 }],
    nodes,
    edges: [
      { from: 'start', to: forkId },
      ...children.map((c) => ({ from: c.id, to: joinId })),
      { from: joinId, to: 'end' },
    ],
  };
}

function nested(levels: number): Record<string, unknown> {
  let workflow = chain('inner');
  for (let i = 0; i < levels; i++) {
    workflow = chain(`level-${i}`, [{ id: 's', type: 'SUBGRAPH', config: { workflow } }]);
  }
  return workflow;
}

const codes = (data: unknown) => validateWorkflow(data).errors.map((error) => error.code);

describe('ids that become state names', () => {
  it('refuses control characters in node ids and fork path ids with INVALID_STATE_NAME', () => {
    expect(
      validateWorkflow(
        chain('w', [
          {
            id: 'a\nb',
            type: 'VARIABLE',
            config: { variableName: 'v', variableType: 'number', expression: '1' },
          },
        ]),
      ).errors,
    ).toContainEqual(expect.objectContaining({ code: 'INVALID_STATE_NAME', nodeId: 'a\nb' }));
    expect(codes(fork('split', ['ok', 'tab\there']))).toContain('INVALID_STATE_NAME');
  });

  it('refuses ids longer than 80 characters with the suffixes their states get', () => {
    const route = (id: string) =>
      chain('w', [{ id, type: 'ROUTE', config: { routes: [], defaultTargetNodeId: 'end' } }]);
    expect(codes(route('r'.repeat(71)))).toEqual([]);
    expect(codes(route('r'.repeat(72)))).toContain('INVALID_STATE_NAME');
    // A 128-character path id (the schema's maximum) is refused here, not at run time.
    expect(validateWorkflow(fork('split', ['a', 'p'.repeat(128)])).errors).toContainEqual(
      expect.objectContaining({
        code: 'INVALID_STATE_NAME',
        path: expect.stringContaining('forkPathIds[1]'),
      }),
    );
    expect(codes(fork('split', ['a', 'p'.repeat(67)]))).toEqual([]);
    expect(codes(fork('split', ['a', 'p'.repeat(68)]))).toContain('INVALID_STATE_NAME');
  });

  it('counts SUBGRAPH prefixes: an inlined id is <subgraph>.<id>', () => {
    const inner = chain('inner', [
      {
        id: 'x'.repeat(40),
        type: 'VARIABLE',
        config: { variableName: 'v', variableType: 'number', expression: '1' },
      },
    ]);
    const outer = (subgraphId: string) =>
      chain('outer', [{ id: subgraphId, type: 'SUBGRAPH', config: { workflow: inner } }]);
    expect(codes(outer('s'.repeat(39)))).toEqual([]);
    expect(codes(outer('s'.repeat(40)))).toContain('INVALID_STATE_NAME');
  });

  it('refuses ids that are Object.prototype properties with RESERVED_ID', () => {
    for (const id of ['__proto__', 'constructor', 'hasOwnProperty', 'toString']) {
      expect(
        codes(
          chain('w', [
            { id, type: 'VARIABLE', config: { variableName: 'v', variableType: 'number', expression: '1' } },
          ]),
        ),
      ).toContain('RESERVED_ID');
    }
    expect(codes(fork('split', ['a', 'hasOwnProperty']))).toContain('RESERVED_ID');
  });

  it('refuses an outputVariable on show_message, which has no answer to store', () => {
    const shown = (extra: Record<string, unknown>) =>
      chain('w', [
        {
          id: 'tell',
          type: 'USER_INTERACTION',
          config: { userInteractionType: 'show_message', showMessage: 'Hi', ...extra },
        },
      ]);
    expect(codes(shown({}))).toEqual([]);
    expect(validateWorkflow(shown({ outputVariable: 'seen' })).errors).toEqual([
      expect.objectContaining({
        code: 'INVALID_NODE_CONFIG',
        path: 'nodes[1].config.outputVariable',
        nodeId: 'tell',
      }),
    ]);
  });

  it('refuses variable names that are Object.prototype properties: declared, written, or an output variable', () => {
    for (const name of ['__proto__', 'constructor', 'toString']) {
      const declared = {
        ...chain('w', []),
        variables: [{ name, type: 'object', scope: 'thread' }],
      };
      expect(validateWorkflow(declared).errors).toEqual([
        expect.objectContaining({ code: 'RESERVED_ID', path: 'variables[0].name' }),
      ]);
      const written = chain('w', [
        {
          id: 'v',
          type: 'VARIABLE',
          config: { variableName: name, variableType: 'object', expression: 'input' },
        },
      ]);
      expect(codes(written)).toContain('RESERVED_ID');
      const asked = chain('w', [
        {
          id: 'ask',
          type: 'USER_INTERACTION',
          config: { userInteractionType: 'ask_for_input', outputVariable: name },
        },
      ]);
      expect(codes(asked)).toContain('RESERVED_ID');
    }
    expect(
      codes({ ...chain('w', []), variables: [{ name: 'proto', type: 'object', scope: 'thread' }] }),
    ).toEqual([]);
  });
});

describe('nesting of any depth', () => {
  it(`accepts ${MAX_SUBGRAPH_NESTING} levels of SUBGRAPH and refuses deeper with SUBGRAPH_TOO_DEEP, 800 levels included`, () => {
    expect(codes(nested(4))).toEqual([]);
    expect(codes(nested(MAX_SUBGRAPH_NESTING + 1))).toEqual(['SUBGRAPH_TOO_DEEP']);
    expect(codes(nested(800))).toEqual(['SUBGRAPH_TOO_DEEP']);
  });

  it(`refuses a file nested more than ${MAX_WORKFLOW_DEPTH} levels with WORKFLOW_TOO_DEEP, 100,000 included`, () => {
    for (const depth of [MAX_WORKFLOW_DEPTH, 100_000]) {
      let output: unknown = 1;
      for (let i = 0; i < depth; i++) output = [output];
      const workflow = chain('w');
      (workflow.nodes as Record<string, unknown>[])[1] = { id: 'end', type: 'END', config: { output } };
      expect(codes(workflow)).toEqual(['WORKFLOW_TOO_DEEP']);
    }
  });
});

describe('definition size', () => {
  it('refuses a workflow whose definition would pass 1 MiB with DEFINITION_TOO_LARGE, instead of crashing: the graph alone counts', () => {
    // 200 LLM nodes each offered 30 tools with 5 KB descriptions (~30 MB when every Task carried its
    // tools): the tools are in the node table, so the definition is small.
    const tools = Object.fromEntries(
      Array.from({ length: 30 }, (_, i) => [
        `tool${i}`,
        {
          description: 'd'.repeat(5000),
          parameters: { type: 'object' },
          handler: { kind: 'code', code: 'return 1' },
        },
      ]),
    );
    const llms = Array.from({ length: 200 }, (_, i) => ({
      id: `ask${i}`,
      type: 'LLM',
      config: { prompt: 'hi', tools: Object.keys(tools) },
    }));
    const wordy = {
      ...chain('wordy', llms),
      profiles: { default: { provider: 'scripted', responses: ['ok'] } },
      tools,
    };
    const result = validateWorkflow(wordy);
    expect(result.errors).toEqual([]);
    expect(JSON.stringify(wordy).length).toBeGreaterThan(150_000);
    expect(compileProblems(result.workflow as Workflow)).toEqual([]);
    expect(compileWorkflow(result.workflow as Workflow).definitionBytes).toBeLessThan(200_000);
    // 2,200 nodes: a graph over 1 MiB on its own (about 510 bytes a node).
    const many = {
      ...chain(
        'many',
        Array.from({ length: 2_200 }, (_, i) => ({ id: `ask${i}`, type: 'LLM', config: { prompt: 'hi' } })),
      ),
      profiles: { default: { provider: 'scripted', responses: ['ok'] } },
    };
    const large = validateWorkflow(many);
    expect(large.errors).toEqual([]);
    expect(compileProblems(large.workflow as Workflow)).toEqual([
      expect.objectContaining({ code: 'DEFINITION_TOO_LARGE' }),
    ]);
    expect(() => compileWorkflow(large.workflow as Workflow)).toThrowError(
      expect.objectContaining({ code: 'DEFINITION_TOO_LARGE' }),
    );
  });
});
