/**
 * The node types beyond FORK/JOIN and the context processor, as a user tries them: loops (data
 * sources, empty and missing lists, maxIterations, nested loops, loop variables, a loop inside a
 * subgraph), ROUTE (priority, default, no match), CODE (inputs, throws, non-JSON, timeouts), VARIABLE
 * types, maxSteps, and tools called with bad arguments — end to end on the embedded runtime.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { validateWorkflow } from '../../engine/validation/validate.ts';
import { type E2e, startE2e, valid } from './helpers.ts';

let e2e: E2e;
beforeAll(async () => {
  e2e = await startE2e('audit-nodes');
});
afterAll(() => e2e.close());

type NodeSpec = { id: string; type: string; config?: unknown };

/** START → nodes… → END with `output`, plus top-level `extra` (variables, tools, profiles, ...). */
function linear(id: string, nodes: NodeSpec[], output: unknown, extra: Record<string, unknown> = {}) {
  const all = [{ id: 'start', type: 'START' }, ...nodes, { id: 'end', type: 'END', config: { output } }];
  return valid({
    id,
    version: 1,
    ...extra,
    nodes: all,
    edges: all.slice(1).map((node, i) => ({ from: all[i]!.id, to: node.id })),
  });
}

const run = (workflow: ReturnType<typeof valid>, input: Record<string, unknown> = {}) =>
  e2e.runtime.prepare(workflow).run(input);

/** A loop over `dataSource` whose body appends `entry` to the thread variable `seen`. */
function collecting(id: string, dataSource: unknown, entry: string, maxIterations = 10) {
  return linear(
    id,
    [
      { id: 'each', type: 'LOOP_START', config: { loopId: 'l', dataSource, maxIterations } },
      {
        id: 'add',
        type: 'VARIABLE',
        config: { variableName: 'seen', variableType: 'array', expression: `concat(seen, [${entry}])` },
      },
      { id: 'next', type: 'LOOP_END', config: { loopId: 'l' } },
    ],
    '{{seen}}',
    { variables: [{ name: 'seen', type: 'array', scope: 'thread', initial: [] }] },
  );
}

describe('LOOP_START / LOOP_END', () => {
  it('iterates a list with `item` and `index`, and an empty list zero times', async () => {
    const loop = collecting('loop-list', '{{input.items}}', "string(index) + ':' + item");
    expect((await run(loop, { items: ['a', 'b', 'c'] })).output).toEqual(['0:a', '1:b', '2:c']);
    const empty = await run(loop, { items: [] });
    expect(empty).toMatchObject({ status: 'COMPLETED', output: [] });
  });

  it('iterates a number, an object and a string as documented', async () => {
    expect((await run(collecting('loop-number', 3, 'item'))).output).toEqual([0, 1, 2]);
    expect((await run(collecting('loop-object', { a: 1, b: 2 }, 'item'))).output).toEqual([
      { key: 'a', value: 1 },
      { key: 'b', value: 2 },
    ]);
    expect((await run(collecting('loop-string', 'ab', 'item'))).output).toEqual(['a', 'b']);
  });

  it('stops after maxIterations whatever is left, without failing', async () => {
    const outcome = await run(collecting('loop-max', '{{input.items}}', 'item', 2), { items: [1, 2, 3, 4] });
    expect(outcome).toMatchObject({ status: 'COMPLETED', output: [1, 2] });
  });

  it('counts up to maxIterations when a dataSource gives nothing, as an absent one does (README)', async () => {
    const loop = collecting('loop-missing', '{{input.items}}', 'item', 3);
    for (const input of [{}, { items: null }]) {
      expect(await run(loop, input)).toMatchObject({ status: 'COMPLETED', output: [0, 1, 2] });
    }
    const guarded = collecting('loop-guarded', '{{input.items ?? []}}', 'item', 3);
    expect(await run(guarded, {})).toMatchObject({ status: 'COMPLETED', output: [] });
  });

  it('lets a nested loop read the outer loop’s item; `index` is the inner one', async () => {
    const nested = linear(
      'loop-nested',
      [
        {
          id: 'rows',
          type: 'LOOP_START',
          config: {
            loopId: 'outer',
            dataSource: '{{input.rows}}',
            iterationVariable: 'row',
            maxIterations: 10,
          },
        },
        {
          id: 'cells',
          type: 'LOOP_START',
          config: {
            loopId: 'inner',
            dataSource: '{{row.cells}}',
            iterationVariable: 'cell',
            maxIterations: 10,
          },
        },
        {
          id: 'add',
          type: 'VARIABLE',
          config: {
            variableName: 'seen',
            variableType: 'array',
            expression: 'concat(seen, [row.name + cell + string(index)])',
          },
        },
        { id: 'cells-end', type: 'LOOP_END', config: { loopId: 'inner' } },
        { id: 'rows-end', type: 'LOOP_END', config: { loopId: 'outer' } },
      ],
      '{{seen}}',
      { variables: [{ name: 'seen', type: 'array', scope: 'thread', initial: [] }] },
    );
    const rows = [
      { name: 'r', cells: ['a', 'b'] },
      { name: 's', cells: [] },
      { name: 't', cells: ['c'] },
    ];
    const outcome = await run(nested, { rows });
    expect(outcome).toMatchObject({ status: 'COMPLETED', output: ['ra0', 'rb1', 'tc0'] });
  });

  it('starts a declared loop variable from its initial value in every iteration', async () => {
    const loop = linear(
      'loop-variable',
      [
        { id: 'each', type: 'LOOP_START', config: { loopId: 'l', dataSource: [1, 2, 3], maxIterations: 10 } },
        {
          id: 'bump',
          type: 'VARIABLE',
          config: { variableName: 'acc', variableType: 'number', expression: 'acc + item' },
        },
        {
          id: 'log',
          type: 'VARIABLE',
          config: { variableName: 'seen', variableType: 'array', expression: 'concat(seen, [acc])' },
        },
        { id: 'next', type: 'LOOP_END', config: { loopId: 'l' } },
      ],
      '{{seen}}',
      {
        variables: [
          { name: 'acc', type: 'number', scope: 'loop', initial: 10 },
          { name: 'seen', type: 'array', scope: 'thread', initial: [] },
        ],
      },
    );
    expect((await run(loop)).output).toEqual([11, 12, 13]);
  });

  it('runs a loop inside a SUBGRAPH over a mapped input and maps its output back', async () => {
    const child = {
      id: 'sum',
      version: 1,
      variables: [{ name: 'total', type: 'number', initial: 0 }],
      nodes: [
        { id: 'start', type: 'START' },
        { id: 'each', type: 'LOOP_START', config: { loopId: 'l', dataSource: '{{xs}}', maxIterations: 10 } },
        {
          id: 'add',
          type: 'VARIABLE',
          config: { variableName: 'total', variableType: 'number', expression: 'total + item' },
        },
        { id: 'next', type: 'LOOP_END', config: { loopId: 'l' } },
        { id: 'end', type: 'END', config: { output: { total: '{{total}}', last: '{{nodes.add}}' } } },
      ],
      edges: [
        { from: 'start', to: 'each' },
        { from: 'each', to: 'add' },
        { from: 'add', to: 'next' },
        { from: 'next', to: 'end' },
      ],
    };
    const parent = linear(
      'subgraph-loop',
      [
        {
          id: 'sub',
          type: 'SUBGRAPH',
          config: {
            workflow: child,
            inputMapping: { xs: 'input.nums' },
            outputMapping: { sum: 'output.total' },
          },
        },
      ],
      { sum: '{{sum}}', node: '{{nodes.sub}}' },
    );
    const outcome = await run(parent, { nums: [1, 2, 3] });
    // `nodes.add` inside the child is the child's node; `nodes.sub` outside is the subgraph's output.
    expect(outcome).toMatchObject({ status: 'COMPLETED', output: { sum: 6, node: { total: 6, last: 6 } } });
  });
});

describe('ROUTE', () => {
  const routeWorkflow = (id: string, routes: unknown[], defaultTargetNodeId?: string) =>
    valid({
      id,
      version: 1,
      nodes: [
        { id: 'start', type: 'START' },
        {
          id: 'pick',
          type: 'ROUTE',
          config: { routes, ...(defaultTargetNodeId ? { defaultTargetNodeId } : {}) },
        },
        {
          id: 'a',
          type: 'VARIABLE',
          config: { variableName: 'which', variableType: 'string', expression: "'a'" },
        },
        {
          id: 'b',
          type: 'VARIABLE',
          config: { variableName: 'which', variableType: 'string', expression: "'b'" },
        },
        { id: 'end', type: 'END', config: { output: '{{which}}' } },
      ],
      edges: [
        { from: 'start', to: 'pick' },
        { from: 'a', to: 'end' },
        { from: 'b', to: 'end' },
      ],
    });

  it('takes the highest priority first, declaration order on ties, else the default', async () => {
    const both = [
      { condition: 'input.x > 0', targetNodeId: 'a', priority: 1 },
      { condition: 'input.x > 0', targetNodeId: 'b', priority: 5 },
    ];
    expect((await run(routeWorkflow('route-priority', both), { x: 1 })).output).toBe('b');
    const ties = [
      { condition: 'input.x > 0', targetNodeId: 'a' },
      { condition: 'input.x > 0', targetNodeId: 'b' },
    ];
    expect((await run(routeWorkflow('route-ties', ties), { x: 1 })).output).toBe('a');
    const fallback = routeWorkflow('route-default', [{ condition: 'input.x == 1', targetNodeId: 'a' }], 'b');
    expect((await run(fallback, { x: 3 })).output).toBe('b');
  });

  it('fails the ROUTE node with NO_ROUTE_MATCHED, naming it, when nothing matches and there is no default', async () => {
    const routes = [
      { condition: 'input.x == 1', targetNodeId: 'a' },
      { condition: 'input.x == 2', targetNodeId: 'b' },
    ];
    const outcome = await run(routeWorkflow('route-none', routes), { x: 3 });
    expect(outcome.status).toBe('FAILED');
    expect(outcome.error).toMatchObject({ code: 'NO_ROUTE_MATCHED', nodeId: 'pick' });
    const thread = await e2e.thread(outcome.threadId);
    expect(thread.status).toBe('FAILED');
    expect(thread.nodeResults.pick?.status).toBe('FAILED');
    expect(thread.errors.map((error) => error.code)).toEqual(['NO_ROUTE_MATCHED']);
  });
});

describe('CODE', () => {
  const code = (id: string, config: Record<string, unknown>, extra: Record<string, unknown> = {}) =>
    linear(id, [{ id: 'c', type: 'CODE', config: { outputVariable: 'res', ...config } }], '{{res}}', extra);

  it('sees the variables and its `inputs` (name → expression) as `input`; awaits a promise', async () => {
    const sum = code(
      'code-inputs',
      { code: 'return { sum: input.a + input.b, g: input.g };', inputs: { a: '1', b: 'input.x' } },
      { variables: [{ name: 'g', type: 'number', initial: 7 }] },
    );
    expect((await run(sum, { x: 2 })).output).toEqual({ sum: 3, g: 7 });
    expect(
      (await run(code('code-async', { code: 'return Promise.resolve(41).then((x) => x + 1);' }))).output,
    ).toBe(42);
  });

  it('has no I/O: require, process and fetch do not exist', async () => {
    const probe = code('code-io', { code: 'return [typeof require, typeof process, typeof fetch];' });
    expect((await run(probe)).output).toEqual(['undefined', 'undefined', 'undefined']);
  });

  it.each([
    ['code-throws', { code: 'throw new Error("boom")' }, 'CODE_ERROR', /boom/],
    ['code-syntax', { code: 'return {{;' }, 'CODE_ERROR', /SyntaxError/],
    ['code-non-json', { code: 'return { f: function () {} };' }, 'CODE_INVALID_OUTPUT', /function/],
    ['code-loops', { code: 'while (true) {}', timeoutMs: 100 }, 'CODE_TIMEOUT', /100 ms/],
  ])('%s fails the node with %s', async (id, config, errorCode, message) => {
    const outcome = await run(code(id, config));
    expect(outcome.status).toBe('FAILED');
    expect(outcome.error).toMatchObject({ code: errorCode, nodeId: 'c' });
    expect(outcome.error?.message).toMatch(message);
  });
});

describe('VARIABLE, maxSteps and tools', () => {
  it('refuses a value of the wrong type with INVALID_VARIABLE at the node that wrote it', async () => {
    const typed = linear(
      'variable-type',
      [
        {
          id: 'v',
          type: 'VARIABLE',
          // A literal 'abc' is refused by validate (test/e2e/user-workflows.test.ts); parsed, it is data.
          config: { variableName: 'n', variableType: 'number', expression: `parseJson('"abc"')` },
        },
      ],
      '{{n}}',
      { variables: [{ name: 'n', type: 'number', initial: 0 }] },
    );
    expect((await run(typed)).error).toMatchObject({ code: 'INVALID_VARIABLE', nodeId: 'v' });
  });

  it('ends a run past maxSteps with MAX_STEPS_EXCEEDED', async () => {
    // The count comes from the input: a fixed one validate already refuses (the next test).
    const long = valid({
      ...linear(
        'max-steps',
        [
          {
            id: 'each',
            type: 'LOOP_START',
            config: { loopId: 'l', dataSource: '{{input.count}}', maxIterations: 100 },
          },
          { id: 'next', type: 'LOOP_END', config: { loopId: 'l' } },
        ],
        'done',
      ),
      maxSteps: 10,
    });
    const outcome = await run(long, { count: 100 });
    expect(outcome.status).toBe('FAILED');
    // It names the setting, its value and where to raise it.
    expect(outcome.error).toMatchObject({
      code: 'MAX_STEPS_EXCEEDED',
      nodeId: 'next',
      message:
        'the run exceeded maxSteps, 10 node executions: to allow more, raise "maxSteps" at the top of the workflow file (default 1000; no run option overrides it)',
    });
  });

  it('runs a loop of fixed length in exactly the steps validate counts for it', async () => {
    // START, 5 × (LOOP_START, VARIABLE, LOOP_END), the exit LOOP_START, END: 18 steps.
    const fixed = (maxSteps: number) => ({
      id: 'fixed-steps',
      version: 1,
      maxSteps,
      variables: [{ name: 'n', type: 'number', initial: 0 }],
      nodes: [
        { id: 'start', type: 'START' },
        { id: 'each', type: 'LOOP_START', config: { loopId: 'l', dataSource: 5, maxIterations: 10 } },
        {
          id: 'inc',
          type: 'VARIABLE',
          config: { variableName: 'n', variableType: 'number', expression: 'n + 1' },
        },
        { id: 'next', type: 'LOOP_END', config: { loopId: 'l' } },
        { id: 'end', type: 'END', config: { output: '{{n}}' } },
      ],
      edges: [
        { from: 'start', to: 'each' },
        { from: 'each', to: 'inc' },
        { from: 'inc', to: 'next' },
        { from: 'next', to: 'end' },
      ],
    });
    expect(validateWorkflow(fixed(17)).errors).toEqual([
      expect.objectContaining({
        code: 'MAX_STEPS_EXCEEDED',
        message: expect.stringContaining('at least 18 steps'),
      }),
    ]);
    const outcome = await run(valid(fixed(18)));
    expect(outcome).toMatchObject({ status: 'COMPLETED', output: 5 });
  });

  const add = {
    description: 'adds two numbers',
    parameters: {
      type: 'object',
      properties: { a: { type: 'number' }, b: { type: 'number' } },
      required: ['a', 'b'],
    },
    handler: { kind: 'code', code: 'return input.a + input.b' },
  };

  it('fails a TOOL node given invalid arguments with TOOL_ARGUMENTS_INVALID', async () => {
    const tool = linear(
      'tool-args',
      [
        {
          id: 't',
          type: 'TOOL',
          config: { toolName: 'add', arguments: { a: '{{input.a}}', b: 2 }, outputVariable: 'res' },
        },
      ],
      '{{res}}',
      { tools: { add } },
    );
    expect((await run(tool, { a: 5 })).output).toBe(7);
    expect((await run(tool, { a: 'five' })).error).toMatchObject({
      code: 'TOOL_ARGUMENTS_INVALID',
      nodeId: 't',
    });
  });

  it('hands a model’s invalid tool call back to it as an error tool result; the run goes on', async () => {
    const agent = linear(
      'llm-tool-args',
      [{ id: 'ask', type: 'LLM', config: { prompt: 'add', tools: ['add'], outputVariable: 'answer' } }],
      '{{answer}}',
      {
        tools: { add },
        profiles: {
          default: {
            provider: 'scripted',
            responses: [
              { toolCalls: [{ name: 'add', arguments: { a: 1, b: 'x' } }] },
              { toolCalls: [{ name: 'add', arguments: { a: 1, b: 2 } }] },
              'three',
            ],
          },
        },
      },
    );
    const outcome = await run(agent);
    expect(outcome).toMatchObject({ status: 'COMPLETED', output: 'three' });
    const tools = (await e2e.conversation(outcome.threadId)).filter((message) => message.role === 'tool');
    expect(tools.map((message) => message.content)).toEqual([
      expect.stringMatching(/TOOL_ARGUMENTS_INVALID/),
      '3',
    ]);
  });
});
