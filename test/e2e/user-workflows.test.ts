/**
 * Workflows written the way a user writes them from the README's workflow-file contract (LLM with
 * tools, TOOL, CODE, VARIABLE, ROUTE, LOOP, SUBGRAPH), mistakes included. Each case here once
 * passed `validate` and then failed every run for a reason the file already showed (an operand of
 * a type no operator takes, a value no declared type holds, a tool argument its schema refuses, a
 * name no one defines), or ran with a value its declared type forbids; now each is a coded
 * `validate` error naming what to change, or fails the run where the value enters. The whole set
 * of workflows tried (about 170) lives outside the repository; these are the ones that found
 * something, plus what must stay valid next to them.
 */
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { validateWorkflow } from '../../engine/validation/validate.ts';
import { runCli } from '../support/cli.ts';
import { type E2e, startE2e, valid } from './helpers.ts';

let e2e: E2e;
beforeAll(async () => {
  e2e = await startE2e('user-workflows');
});
afterAll(async () => {
  await e2e.close();
});

type NodeSpec = { id: string; type: string; config?: unknown; hooks?: unknown[] };

/** START → nodes… → END, with `extra` top-level fields (variables, tools, profiles). */
function linear(
  id: string,
  nodes: NodeSpec[],
  extra: Record<string, unknown> = {},
  output: unknown = 'done',
) {
  const all = [{ id: 'start', type: 'START' }, ...nodes, { id: 'end', type: 'END', config: { output } }];
  return {
    id,
    version: 1,
    profiles: { default: { provider: 'scripted', responses: ['ok'] } },
    ...extra,
    nodes: all,
    edges: all.slice(1).map((node, i) => ({ from: all[i]!.id, to: node.id })),
  };
}

/** "CODE path" for each problem validate reports. */
function problems(workflow: unknown): string[] {
  return validateWorkflow(workflow).errors.map((error) => `${error.code} ${error.path ?? ''}`);
}

function messages(workflow: unknown): string[] {
  return validateWorkflow(workflow).errors.map((error) => error.message);
}

const variable = (id: string, config: Record<string, unknown>, hooks?: unknown[]): NodeSpec => ({
  id,
  type: 'VARIABLE',
  config,
  ...(hooks ? { hooks } : {}),
});

/** A child workflow: START → nodes → END with `output`. */
function child(nodes: NodeSpec[], output: unknown, extra: Record<string, unknown> = {}) {
  const all = [{ id: 'begin', type: 'START' }, ...nodes, { id: 'finish', type: 'END', config: { output } }];
  return {
    id: 'child',
    version: 1,
    ...extra,
    nodes: all,
    edges: all.slice(1).map((node, i) => ({ from: all[i]!.id, to: node.id })),
  };
}

const add = {
  add: {
    description: 'adds two numbers',
    parameters: {
      type: 'object',
      properties: { a: { type: 'number' }, b: { type: 'number' } },
      required: ['a', 'b'],
    },
    handler: { kind: 'code', code: 'return input.a + input.b' },
  },
};

describe('expressions whose operand types are fixed in the file (run: EXPRESSION_ERROR every time)', () => {
  it.each([
    ['len(len(1))', /len\(\) expects a string, array or object as argument 1, but it is always a number/],
    ["'a' * 2", /operator "\*" expects two numbers, but gets a string and a number/],
    ["'5' - 1", /operator "-" expects two numbers/],
    ["-'a'", /operator "-" expects a number, but gets a string/],
    ['upper(5)', /upper\(\) expects a string as argument 1/],
    ['concat([1], 2)', /concat\(\) expects an array as argument 2/],
    ["round(1.5, '1')", /round\(\) expects an integer as argument 2/],
    ["1 < 'a'", /operator "<" expects two numbers or two strings/],
    ['(input.flag ? "a" : null) * 2', /but gets a string or null and a number/],
  ])('VARIABLE %s is INVALID_EXPRESSION', (expression, message) => {
    const workflow = linear('types', [variable('x', { variableName: 'x', variableType: 'any', expression })]);
    expect(problems(workflow)).toEqual(['INVALID_EXPRESSION nodes[1].config.expression']);
    expect(messages(workflow)[0]).toMatch(message);
  });

  it('in every place an expression is written: a ROUTE condition, a hook condition, a prompt template', () => {
    const workflow = linear(
      'everywhere',
      [
        variable('v', { variableName: 'x', variableType: 'number', expression: '1' }, [
          { hookType: 'BEFORE_EXECUTE', eventName: 'e', condition: 'len(1) > 0' },
        ]),
        { id: 'l', type: 'LLM', config: { prompt: 'Say {{ upper(len(x)) }}' } },
        {
          id: 'r',
          type: 'ROUTE',
          config: {
            routes: [{ condition: "len(x) > 'three'", targetNodeId: 'end' }],
            defaultTargetNodeId: 'end',
          },
        },
      ],
      {},
    );
    expect(problems(workflow)).toEqual([
      'INVALID_EXPRESSION nodes[1].hooks[0].condition',
      'INVALID_EXPRESSION nodes[2].config.prompt',
      'INVALID_EXPRESSION nodes[3].config.routes[0].condition',
    ]);
  });

  it.each([
    'x + 1', // x may be a number or a string
    '(x ?? 0) + 1',
    "'n = ' + 1", // a string side concatenates
    'len(x ?? 1)',
    'contains([1, 2], 1)',
    'min([1, 2])',
    "input.flag ? 'a' : 1",
    "string(1) + 'x'",
    "slice('abc', 1)",
  ])('%s stays valid: some value could make it right', (expression) => {
    const workflow = linear('fine', [variable('v', { variableName: 'y', variableType: 'any', expression })], {
      variables: [{ name: 'x', type: 'any' }],
    });
    expect(problems(workflow)).toEqual([]);
  });

  it('the run never gets that far: the CLI refuses before starting (the run reported EXPRESSION_ERROR at node x)', async () => {
    const workflow = linear('len-len', [
      variable('x', { variableName: 'x', variableType: 'number', expression: 'len(len(1))' }),
    ]);
    expect(() => valid(workflow)).toThrow(/INVALID_EXPRESSION/);
  });
});

describe('expressions over declared variables (run: EXPRESSION_ERROR every time)', () => {
  const loop = (breakCondition: string, variables: unknown[], body: NodeSpec[] = []) =>
    linear(
      'declared',
      [
        { id: 'each', type: 'LOOP_START', config: { loopId: 'l', dataSource: [1, 2, 3], maxIterations: 5 } },
        variable('push', { variableName: 'acc', variableType: 'array', expression: 'concat(acc, [item])' }),
        ...body,
        { id: 'next', type: 'LOOP_END', config: { loopId: 'l', breakCondition } },
      ],
      { variables },
      '{{acc}}',
    );

  it('a breakCondition comparing an array variable with a number (meant len(acc) >= 2)', () => {
    const workflow = loop('acc >= 2', [{ name: 'acc', type: 'array', initial: [] }]);
    expect(problems(workflow)).toEqual(['INVALID_EXPRESSION nodes[3]']);
    expect(messages(workflow)[0]).toBe(
      'Invalid expression "acc >= 2": operator ">=" expects two numbers or two strings, but gets an array and a number ("acc" is declared array)',
    );
    expect(problems(loop('len(acc) >= 2', [{ name: 'acc', type: 'array', initial: [] }]))).toEqual([]);
  });

  it('a number variable given to a text function, in a prompt', () => {
    const workflow = linear(
      'declared-prompt',
      [{ id: 'l', type: 'LLM', config: { prompt: 'Tell {{ upper(count) }}' } }],
      {
        variables: [{ name: 'count', type: 'number', initial: 0 }],
      },
    );
    expect(messages(workflow)).toEqual([
      'Invalid expression " upper(count) ": upper() expects a string as argument 1, but it is always a number ("count" is declared number)',
    ]);
  });

  it.each([
    ['declared without a type', [{ name: 'acc', initial: [] }], []],
    ['declared any', [{ name: 'acc', type: 'any', initial: [] }], []],
    [
      'also a loop variable',
      [{ name: 'acc', type: 'array', initial: [] }],
      [
        {
          id: 'inner',
          type: 'LOOP_START',
          config: { loopId: 'm', dataSource: 1, iterationVariable: 'acc', maxIterations: 1 },
        },
        { id: 'inner-end', type: 'LOOP_END', config: { loopId: 'm' } },
      ],
    ],
    [
      'written in another scope too',
      [{ name: 'acc', type: 'array', initial: [] }],
      [variable('shadow', { variableName: 'acc', variableType: 'number', expression: '1', scope: 'loop' })],
    ],
  ])('is left to the run when the variable is %s', (_, variables, body) => {
    expect(problems(loop('acc >= 2', variables, body as NodeSpec[]))).toEqual([]);
  });
});

describe('values their declared type can never hold (run: INVALID_VARIABLE every time)', () => {
  it.each([
    ['number', "'abc'", 'always a string'],
    ['boolean', "'yes'", 'always a string'],
    ['array', "'x'", 'always a string'],
    ['object', '[1]', 'always an array'],
    ['string', 'len(input.items)', 'always a number'],
  ])('a VARIABLE of variableType %s set to %s', (variableType, expression, always) => {
    const workflow = linear('typed', [variable('v', { variableName: 'v', variableType, expression })]);
    expect(problems(workflow)).toEqual(['INVALID_VARIABLE nodes[1].config.expression']);
    expect(messages(workflow)[0]).toContain(always);
    expect(messages(workflow)[0]).toContain('change the expression or the variableType');
  });

  it('an expression that may give the type stays valid, and the run checks the value', async () => {
    const workflow = linear(
      'typed-late',
      [variable('v', { variableName: 'v', variableType: 'number', expression: 'input.n' })],
      {},
      '{{v}}',
    );
    expect(problems(workflow)).toEqual([]);
    const outcome = await e2e.runtime.prepare(valid(workflow)).run({ n: 'three' });
    expect(outcome.error).toMatchObject({ code: 'INVALID_VARIABLE', nodeId: 'v' });
  });

  it("an LLM node's outputVariable declared other than string (the reply is always text)", () => {
    const workflow = linear(
      'llm-typed',
      [{ id: 'l', type: 'LLM', config: { prompt: 'How many?', outputVariable: 'count' } }],
      {
        variables: [{ name: 'count', type: 'number', initial: 0 }],
      },
    );
    expect(problems(workflow)).toEqual(['INVALID_VARIABLE nodes[1].config.outputVariable']);
    expect(messages(workflow)[0]).toMatch(
      /an LLM node always stores a string in it: declare it string or any/,
    );
  });

  it("an approval's outputVariable declared string (it stores true or false); a selection's declared boolean", () => {
    const ask = (id: string, type: string, extra: Record<string, unknown> = {}) => ({
      id,
      type: 'USER_INTERACTION',
      config: { userInteractionType: type, outputVariable: id, ...extra },
    });
    const workflow = linear(
      'asked',
      [ask('ok', 'ask_for_approval'), ask('pick', 'ask_for_selection', { options: ['a', 'b'] })],
      {
        variables: [
          { name: 'ok', type: 'string' },
          { name: 'pick', type: 'boolean' },
        ],
      },
    );
    expect(problems(workflow)).toEqual([
      'INVALID_VARIABLE nodes[1].config.outputVariable',
      'INVALID_VARIABLE nodes[2].config.outputVariable',
    ]);
    const fine = linear(
      'asked-fine',
      [ask('ok', 'ask_for_approval'), ask('pick', 'ask_for_selection', { options: ['a'] })],
      {
        variables: [
          { name: 'ok', type: 'boolean' },
          { name: 'pick', type: 'any' },
        ],
      },
    );
    expect(problems(fine)).toEqual([]);
  });
});

describe('LOOP_START dataSource', () => {
  it('a template that always gives a boolean is refused (run: "not iterable" at the loop)', () => {
    const nodes = [
      {
        id: 'each',
        type: 'LOOP_START',
        config: { loopId: 'l', dataSource: '{{ len(input.items) > 0 }}', maxIterations: 5 },
      },
      { id: 'next', type: 'LOOP_END', config: { loopId: 'l' } },
    ];
    const workflow = linear('bool-source', nodes);
    expect(problems(workflow)).toEqual(['INVALID_NODE_CONFIG nodes[1].config.dataSource']);
    expect(messages(workflow)[0]).toMatch(
      /always gives a boolean.*give an array, an object, a whole number ≥ 0 or a string/,
    );
  });

  it('one that gives a boolean only at run time fails saying what a dataSource may give', async () => {
    const nodes = [
      {
        id: 'each',
        type: 'LOOP_START',
        config: { loopId: 'l', dataSource: '{{input.items}}', maxIterations: 5 },
      },
      { id: 'next', type: 'LOOP_END', config: { loopId: 'l' } },
    ];
    const outcome = await e2e.runtime.prepare(valid(linear('bool-late', nodes))).run({ items: true });
    expect(outcome.error).toMatchObject({ code: 'EXPRESSION_ERROR', nodeId: 'each' });
    expect(outcome.error?.message).toMatch(
      /not iterable: true; a dataSource gives an array, an object, a whole number/,
    );
  });
});

describe('SUBGRAPH', () => {
  const doubler = () =>
    child(
      [variable('double', { variableName: 'y', variableType: 'number', expression: 'x * 2' })],
      { y: '{{y}}' },
      {
        variables: [{ name: 'x', type: 'number', initial: 0 }],
      },
    );

  it('an outputMapping reading a name the child never defines (the caller silently got nothing)', () => {
    const workflow = linear('out-typo', [
      {
        id: 'sub',
        type: 'SUBGRAPH',
        config: { workflow: doubler(), inputMapping: { x: '2' }, outputMapping: { res: 'z' } },
      },
    ]);
    expect(problems(workflow)).toEqual(['UNKNOWN_VARIABLE_REFERENCE nodes[1]']);
    expect(messages(workflow)[0]).toMatch(/reads "z", which no variable declaration, node or loop defines/);
  });

  it('an inputMapping reading a name the caller never defines', () => {
    const workflow = linear('in-typo', [
      { id: 'sub', type: 'SUBGRAPH', config: { workflow: doubler(), inputMapping: { x: 'nmuber' } } },
    ]);
    expect(problems(workflow)).toEqual(['UNKNOWN_VARIABLE_REFERENCE nodes[1]']);
  });

  it("outputMapping may read the child's variables and its END's output", () => {
    const workflow = linear(
      'out-fine',
      [
        {
          id: 'sub',
          type: 'SUBGRAPH',
          config: {
            workflow: doubler(),
            inputMapping: { x: 'input.n' },
            outputMapping: { res: 'y', all: 'output' },
          },
        },
      ],
      {},
      { res: '{{res}}', all: '{{all}}' },
    );
    expect(problems(workflow)).toEqual([]);
  });

  it('a template inside the child reading an unknown name, or an unknown node (both were never checked below the top level)', () => {
    const workflow = linear('child-typos', [
      {
        id: 'sub',
        type: 'SUBGRAPH',
        config: { workflow: child([], { a: '{{nmae}}', b: '{{nodes.nope}}' }) },
      },
    ]);
    expect(problems(workflow)).toEqual([
      'UNKNOWN_NODE_REFERENCE nodes[1].config.workflow.nodes[1]',
      'UNKNOWN_VARIABLE_REFERENCE nodes[1].config.workflow.nodes[1]',
    ]);
    // The child reads its caller's variables and nodes, and its own nodes.
    const fine = linear('child-reads', [
      variable('name', { variableName: 'name', variableType: 'string', expression: "'Ada'" }),
      {
        id: 'sub',
        type: 'SUBGRAPH',
        config: { workflow: child([], { a: 'hi {{name}}', b: '{{nodes.begin}}', c: '{{nodes.name}}' }) },
      },
    ]);
    expect(problems(fine)).toEqual([]);
  });

  it("an inputMapping literal the child's declared type cannot hold", () => {
    const workflow = linear('in-type', [
      { id: 'sub', type: 'SUBGRAPH', config: { workflow: doubler(), inputMapping: { x: "'abc'" } } },
    ]);
    expect(problems(workflow)).toEqual(['INVALID_VARIABLE nodes[1].config.inputMapping.x']);
    expect(messages(workflow)[0]).toMatch(
      /inputMapping sets "x", declared number in the child workflow, to "'abc'", which is always a string/,
    );
  });

  it('an inputMapping value of the wrong type fails the run as the child starts, as any write of a declared variable does', async () => {
    const workflow = linear(
      'in-type-late',
      [
        {
          id: 'sub',
          type: 'SUBGRAPH',
          config: { workflow: doubler(), inputMapping: { x: 'input.n' }, outputMapping: { res: 'y' } },
        },
      ],
      {},
      '{{res}}',
    );
    const prepared = e2e.runtime.prepare(valid(workflow));
    expect((await prepared.run({ n: 4 })).output).toBe(8);
    // Before: the child's number x held "abc" and the run failed later, at `x * 2`, with EXPRESSION_ERROR.
    const outcome = await prepared.run({ n: 'abc' });
    expect(outcome.error).toMatchObject({ code: 'INVALID_VARIABLE', nodeId: 'sub.begin' });
    expect(outcome.error?.message).toMatch(
      /variable "x" \(subgraph\) is declared number but was given string/,
    );
  });
});

describe("TOOL node arguments against the tool's parameters (run: TOOL_ARGUMENTS_INVALID every time)", () => {
  const tool = (args: Record<string, unknown>, tools: Record<string, unknown> = add) =>
    linear(
      'tool-args',
      [{ id: 't', type: 'TOOL', config: { toolName: Object.keys(tools)[0], arguments: args } }],
      { tools },
    );

  it.each([
    [{ a: 1, b: 'two' }, /argument "b" is "two" \(string\), but the tool's parameters want number/],
    [{ a: 1 }, /argument "b" is required by the tool's parameters but not given/],
    [
      { a: 1, b: '{{ len(input.items) > 0 }}' },
      /argument "b" is .* \(boolean\), but the tool's parameters want number/,
    ],
    [{ a: 1, b: 'count: {{input.n}}' }, /argument "b" is .* \(string\)/],
  ])('%j', (args, message) => {
    expect(problems(tool(args))).toEqual(['TOOL_ARGUMENTS_INVALID nodes[1].config.arguments']);
    expect(messages(tool(args))[0]).toMatch(message);
  });

  it('an argument a closed schema (additionalProperties: false) does not list', () => {
    const strict = {
      strict: {
        description: 'x',
        parameters: { type: 'object', properties: { a: { type: 'number' } }, additionalProperties: false },
        handler: { kind: 'code', code: 'return input' },
      },
    };
    expect(messages(tool({ a: 1, c: 2 }, strict))).toEqual([
      'TOOL node "t" calls "strict": argument "c" is not among the tool\'s parameters ("a")',
    ]);
  });

  it('arguments known only at run time, a default, and a lone template of the right type stay valid', async () => {
    expect(problems(tool({ a: '{{input.a}}', b: '{{ len(input.items) }}' }))).toEqual([]);
    const withDefault = {
      add: {
        ...add.add,
        parameters: {
          ...add.add.parameters,
          properties: { a: { type: 'number' }, b: { type: 'number', default: 1 } },
        },
      },
    };
    expect(problems(tool({ a: 1 }, withDefault))).toEqual([]);
    const outcome = await e2e.runtime
      .prepare(
        valid(
          linear(
            'tool-ok',
            [
              {
                id: 't',
                type: 'TOOL',
                config: { toolName: 'add', arguments: { a: 1, b: '{{ 1 + 1 }}' }, outputVariable: 'sum' },
              },
            ],
            { tools: add },
            '{{sum}}',
          ),
        ),
      )
      .run({});
    expect(outcome.output).toBe(3);
  });
});

describe('a module tool from the CLI', () => {
  it("resolves its relative path from the workflow file's folder, as the README says (it failed: the folder was unknown)", async () => {
    const dir = await mkdtemp(join(tmpdir(), 'stepthread-user-workflows-'));
    try {
      await mkdir(join(dir, 'flows'));
      await writeFile(
        join(dir, 'flows', 'lookup.mjs'),
        'export async function lookup(args) { return { found: args.id }; }\n',
      );
      const workflow = linear(
        'module-tool',
        [{ id: 't', type: 'TOOL', config: { toolName: 'lookup', arguments: { id: '42' } } }],
        { tools: { lookup: { description: 'finds', handler: 'module:./lookup.mjs#lookup' } } },
        '{{nodes.t}}',
      );
      await writeFile(join(dir, 'flows', 'module-tool.json'), JSON.stringify(workflow));
      // From the folder above, by a relative path: the module is next to the workflow, not here.
      const result = await runCli(
        ['run', join('flows', 'module-tool.json'), '--json', '--data-dir', 'data'],
        {
          cwd: dir,
          readFile: (path) => readFile(resolve(dir, path), 'utf8'),
        },
      );
      expect(result.stderr).not.toMatch(/folder is unknown/);
      expect(JSON.parse(result.stdout)).toMatchObject({ status: 'COMPLETED', output: { found: '42' } });
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
