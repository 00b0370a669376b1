import { describe, expect, it } from 'vitest';
import { compileWorkflow } from '../../../engine/asl/compile.ts';
import { validateWorkflow } from '../../../engine/validation/validate.ts';

function listWorkflow(
  fork: Record<string, unknown>,
  join: Record<string, unknown> = {},
  prompt = '{{doc.id}} {{docIndex}}',
) {
  return {
    id: 'list',
    version: 1,
    profiles: { default: { provider: 'scripted', responses: ['ok'] } },
    nodes: [
      { id: 'start', type: 'START' },
      {
        id: 'each',
        type: 'FORK',
        config: {
          forkPathIds: ['doc'],
          forkStrategy: 'parallel',
          childNodeIds: ['read'],
          forEach: '{{input.docs}}',
          itemVariable: 'doc',
          ...fork,
        },
      },
      { id: 'read', type: 'LLM', config: { prompt } },
      { id: 'merge', type: 'JOIN', config: { forkPathIds: ['doc'], joinStrategy: 'ALL_COMPLETED', ...join } },
      { id: 'end', type: 'END' },
    ],
    edges: [
      { from: 'start', to: 'each' },
      { from: 'read', to: 'merge' },
      { from: 'merge', to: 'end' },
    ],
  };
}

const codes = (data: unknown) => validateWorkflow(data).errors.map((error) => error.code);

describe('validating a FORK over a list', () => {
  it('accepts the item variable and its index in the items, and any threshold (the length is known at run time)', () => {
    expect(codes(listWorkflow({}))).toEqual([]);
    expect(
      codes(
        listWorkflow(
          { maxConcurrency: 0, mode: 'distributed' },
          { joinStrategy: 'SUCCESS_COUNT_THRESHOLD', threshold: 50 },
        ),
      ),
    ).toEqual([]);
    expect(codes(listWorkflow({ itemVariable: undefined }, {}, '{{item.id}} {{itemIndex}}'))).toEqual([]);
  });

  it('reports a misspelt item variable with a suggestion', () => {
    const result = validateWorkflow(listWorkflow({}, {}, '{{dco.id}}'));
    expect(result.errors).toEqual([
      expect.objectContaining({
        code: 'UNKNOWN_VARIABLE_REFERENCE',
        message: expect.stringContaining('"doc"'),
      }),
    ]);
  });

  it('reports item and index read where the FORK renamed its item, pointing at the renamed names', () => {
    const result = validateWorkflow(listWorkflow({}, {}, '{{item.text}} ({{itemIndex}}, {{index}})'));
    expect(result.errors).toEqual([
      expect.objectContaining({
        code: 'UNKNOWN_VARIABLE_REFERENCE',
        nodeId: 'read',
        message: expect.stringMatching(
          /reads "item".*did you mean "doc"\?.*FORK each's item \(itemVariable\)/,
        ),
      }),
      expect.objectContaining({
        code: 'UNKNOWN_VARIABLE_REFERENCE',
        message: expect.stringMatching(/reads "itemIndex".*did you mean "docIndex"\?/),
      }),
      expect.objectContaining({
        code: 'UNKNOWN_VARIABLE_REFERENCE',
        message: expect.stringMatching(/reads "index".*did you mean "docIndex"\?/),
      }),
    ]);
  });

  it('reports item and index read in a workflow that iterates nowhere', () => {
    const plain = {
      id: 'plain',
      version: 1,
      profiles: { default: { provider: 'scripted', responses: ['ok'] } },
      nodes: [
        { id: 'start', type: 'START' },
        { id: 'ask', type: 'LLM', config: { prompt: '{{item}} {{index}}' } },
        { id: 'end', type: 'END' },
      ],
      edges: [
        { from: 'start', to: 'ask' },
        { from: 'ask', to: 'end' },
      ],
    };
    expect(validateWorkflow(plain).errors.map(({ code, message }) => [code, message])).toEqual([
      [
        'UNKNOWN_VARIABLE_REFERENCE',
        'node ask reads "item", which no variable declaration, node or loop defines',
      ],
      [
        'UNKNOWN_VARIABLE_REFERENCE',
        'node ask reads "index", which no variable declaration, node or loop defines',
      ],
    ]);
  });

  it('lets a list FORK leave forkStrategy out: it runs as parallel, a Map limited by maxConcurrency alone', () => {
    const defaulted = validateWorkflow(listWorkflow({ forkStrategy: undefined, maxConcurrency: 4 }));
    expect(defaulted.errors).toEqual([]);
    const parallel = validateWorkflow(listWorkflow({ forkStrategy: 'parallel', maxConcurrency: 4 }));
    expect(compileWorkflow(defaulted.workflow!).definition).toEqual(
      compileWorkflow(parallel.workflow!).definition,
    );
    expect(JSON.stringify(compileWorkflow(defaulted.workflow!).definition)).toContain('"MaxConcurrency":4');
  });

  it('still requires forkStrategy on a FORK over paths, saying which values it takes', () => {
    const paths = listWorkflow(
      { forkStrategy: undefined, forEach: undefined, itemVariable: undefined },
      {},
      'x',
    );
    expect(validateWorkflow(paths).errors).toEqual([
      {
        code: 'INVALID_NODE_CONFIG',
        message:
          'forkStrategy is required on a FORK over paths: "parallel" (the paths run at once) or "serial" (one after another, in order); only a FORK over a list (forEach) may leave it out, and then runs its items in parallel',
        nodeId: 'each',
        path: 'nodes[1].config.forkStrategy',
      },
    ]);
  });

  it('reports bad concurrency, a non-name item variable, mainItem misuse and an unknown mode', () => {
    expect(codes(listWorkflow({ maxConcurrency: -1 }))).toEqual(['INVALID_MAX_CONCURRENCY']);
    expect(codes(listWorkflow({ maxConcurrency: 1.5 }))).toContain('INVALID_NODE_CONFIG');
    expect(codes(listWorkflow({ itemVariable: 'a.b' }, {}, 'x'))).toEqual(['INVALID_VARIABLE']);
    expect(codes(listWorkflow({}, { mainItem: -1 }))).toEqual(['INVALID_MAIN_ITEM']);
    expect(codes(listWorkflow({ mode: 'cluster' }))).toContain('INVALID_NODE_CONFIG');
  });
});
