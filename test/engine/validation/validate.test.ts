import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseWorkflow } from '../../../engine/model/parse.ts';
import { DEFAULT_MAX_STEPS } from '../../../engine/model/schema.ts';
import { validateWorkflow } from '../../../engine/validation/validate.ts';

const linear = () => ({
  id: 'linear',
  version: 1,
  profiles: { default: { provider: 'scripted', responses: ['ok'] } },
  nodes: [
    { id: 'start', type: 'START' },
    { id: 'ask', type: 'LLM', config: { prompt: 'hi' } },
    { id: 'end', type: 'END' },
  ],
  edges: [
    { from: 'start', to: 'ask' },
    { from: 'ask', to: 'end' },
  ],
});

describe('validateWorkflow', () => {
  it('reports unknown keys anywhere, each with the key it most likely meant', () => {
    const workflow = {
      ...linear(),
      maxStep: 10,
      nodes: [
        { id: 'start', type: 'START' },
        { id: 'ask', type: 'LLM', config: { prompt: 'hi', outputVarible: 'answer' } },
        { id: 'end', type: 'END', colour: 'red' },
      ],
    };
    const { valid, errors } = validateWorkflow(workflow);
    expect(valid).toBe(false);
    expect(errors).toEqual([
      {
        code: 'UNKNOWN_KEY',
        message: 'nodes[1].config.outputVarible: unknown key "outputVarible"; did you mean "outputVariable"?',
        path: 'nodes[1].config.outputVarible',
        nodeId: 'ask',
      },
      {
        code: 'UNKNOWN_KEY',
        message: 'nodes[2].colour: unknown key "colour"',
        path: 'nodes[2].colour',
        nodeId: 'end',
      },
      {
        code: 'UNKNOWN_KEY',
        message: 'maxStep: unknown key "maxStep"; did you mean "maxSteps"?',
        path: 'maxStep',
      },
    ]);
  });

  it('reports unknown keys beside structural errors elsewhere, in subgraphs too', () => {
    const child = {
      ...linear(),
      id: 'child',
      colour: 'red',
      nodes: [
        { id: 'start', type: 'START' },
        { id: 'ask', type: 'LLM', config: { prompt: 7, outputVarible: 'x' } },
        { id: 'end', type: 'END', config: { outptu: 'x' } },
      ],
    };
    const workflow = {
      ...linear(),
      maxStep: 10,
      variables: [{ name: 'n', type: 'number', initial: 0, scpoe: 'thread' }],
      nodes: [
        { id: 'start', type: 'START' },
        { id: 'ask', type: 'SUBGRAPH', config: { workflow: child } },
        { id: 'end', type: 'END', config: { output: 'x' } },
      ],
    };
    // The LLM node that does not parse still has its unknown key named.
    expect(validateWorkflow(workflow).errors.map(({ code, path }) => [code, path])).toEqual([
      ['INVALID_NODE_CONFIG', 'nodes[1].config.workflow.nodes[1].config.prompt'],
      ['UNKNOWN_KEY', 'maxStep'],
      ['UNKNOWN_KEY', 'variables[0].scpoe'],
      ['UNKNOWN_KEY', 'nodes[1].config.workflow.colour'],
      ['UNKNOWN_KEY', 'nodes[1].config.workflow.nodes[1].config.outputVarible'],
      ['UNKNOWN_KEY', 'nodes[1].config.workflow.nodes[2].config.outptu'],
    ]);
  });

  it('says where a key the schema knows elsewhere belongs, rather than suggesting the key itself', () => {
    const workflow = {
      ...linear(),
      nodes: [
        { id: 'start', type: 'START' },
        {
          id: 'ask',
          type: 'CONTEXT_PROCESSOR',
          config: { operation: 'truncate', keepLast: 2, truncate: { keepLast: 2 } },
        },
        { id: 'end', type: 'END' },
      ],
    };
    const { errors } = validateWorkflow(workflow);
    expect(errors).toEqual([
      {
        code: 'UNKNOWN_KEY',
        message:
          'nodes[1].config.keepLast: unknown key "keepLast" here: "keepLast" belongs in "truncate" of the config of a CONTEXT_PROCESSOR node',
        path: 'nodes[1].config.keepLast',
        nodeId: 'ask',
      },
    ]);
  });

  it("names the node type whose config takes a key put on another node's (breakCondition on a LOOP_START)", () => {
    const workflow = {
      ...linear(),
      nodes: [
        { id: 'start', type: 'START' },
        {
          id: 'loop',
          type: 'LOOP_START',
          config: { loopId: 'l', dataSource: 3, maxIterations: 5, breakCondition: 'index > 1' },
        },
        { id: 'lend', type: 'LOOP_END', config: { loopId: 'l' } },
        { id: 'end', type: 'END' },
      ],
      edges: [
        { from: 'start', to: 'loop' },
        { from: 'loop', to: 'lend' },
        { from: 'lend', to: 'end' },
      ],
    };
    expect(validateWorkflow(workflow).errors.map((error) => error.message)).toEqual([
      'nodes[1].config.breakCondition: unknown key "breakCondition" here: "breakCondition" belongs in the config of a LOOP_END node',
    ]);
  });

  it('says where a known key put in the wrong place belongs: byPrompt in a reply, not the profile', () => {
    const workflow = {
      ...linear(),
      maxIterations: 3,
      profiles: {
        default: { provider: 'scripted', byPrompt: [{ contains: 'refund', reply: 'yes' }] },
        other: { provider: 'scripted', responses: ['ok'], apiKeyEnv: 'KEY' },
      },
      nodes: [
        { id: 'start', type: 'START' },
        { id: 'ask', type: 'LLM', config: { prompt: 'hi' }, breakCondition: 'true' },
        { id: 'end', type: 'END' },
      ],
    };
    expect(validateWorkflow(workflow).errors.map((error) => [error.code, error.message])).toEqual([
      [
        'UNKNOWN_KEY',
        'profiles.default.byPrompt: unknown key "byPrompt" here: "byPrompt" belongs in a reply of a scripted profile, an entry of its "responses" or of a "byNode" list: "byNode": {"<node id>": [{"byPrompt": [{"contains": "…", "reply": "…"}], "otherwise": "…"}]}',
      ],
      [
        'UNKNOWN_KEY',
        'profiles.other.apiKeyEnv: unknown key "apiKeyEnv" here: "apiKeyEnv" belongs in an entry of "profiles" with "provider": "openai"',
      ],
      [
        'UNKNOWN_KEY',
        'nodes[1].breakCondition: unknown key "breakCondition" here: "breakCondition" belongs in the config of a LOOP_END node',
      ],
      [
        'UNKNOWN_KEY',
        'maxIterations: unknown key "maxIterations" here: "maxIterations" belongs in the config of a LOOP_START node',
      ],
    ]);
  });

  it("suggests, under a node's config, the key of that node type it most likely meant", () => {
    const workflow = {
      ...linear(),
      nodes: [
        { id: 'start', type: 'START' },
        {
          id: 'ask',
          type: 'USER_INTERACTION',
          config: { userInteractionType: 'ask_for_input', message: 'Why?', timeout: 5 },
        },
        { id: 'end', type: 'END' },
      ],
    };
    expect(validateWorkflow(workflow).errors.map((error) => error.message)).toEqual([
      'nodes[1].config.message: unknown key "message"; did you mean "showMessage"?',
      'nodes[1].config.timeout: unknown key "timeout"; did you mean "timeoutSeconds"?',
    ]);
  });

  it('quotes the value a field that takes one of a set was given', () => {
    const workflow = {
      ...linear(),
      nodes: [
        { id: 'start', type: 'START' },
        {
          id: 'ask',
          type: 'VARIABLE',
          config: { variableName: 'x', variableType: 'integer', expression: '1' },
        },
        { id: 'end', type: 'END' },
      ],
    };
    expect(validateWorkflow(workflow).errors.map((error) => error.message)).toEqual([
      'nodes[1].config.variableType: Invalid option: expected one of "string"|"number"|"boolean"|"array"|"object"|"any", got "integer"',
    ]);
  });

  it('names the key a required field was most likely given under', () => {
    const workflow = {
      ...linear(),
      nodes: [
        { id: 'start', type: 'START' },
        {
          id: 'ask',
          type: 'USER_INTERACTION',
          config: { interactionType: 'ask_for_input', message: 'Why?' },
        },
        { id: 'end', type: 'END' },
      ],
    };
    const { errors } = validateWorkflow(workflow);
    expect(errors).toEqual([
      expect.objectContaining({
        code: 'INVALID_USER_INTERACTION_TYPE',
        message: expect.stringMatching(
          /^nodes\[1\]\.config\.userInteractionType: required but missing \(.*\); the object has "interactionType": did you mean "userInteractionType"\?$/,
        ),
      }),
      // In the same run, the other key it does not take; "interactionType" is named above already.
      expect.objectContaining({
        code: 'UNKNOWN_KEY',
        message: 'nodes[1].config.message: unknown key "message"; did you mean "showMessage"?',
      }),
    ]);
  });

  it("names a route's keys from other frameworks (when, to) and its other unknown keys in the same run", () => {
    const workflow = {
      ...linear(),
      nodes: [
        { id: 'start', type: 'START' },
        {
          id: 'route',
          type: 'ROUTE',
          config: {
            routes: [
              { condition: 'true', targetNodeId: 'end' },
              { when: 'false', to: 'end', prio: 1 },
            ],
          },
        },
        { id: 'end', type: 'END' },
      ],
      edges: [
        { from: 'start', to: 'route' },
        { from: 'route', to: 'end' },
      ],
    };
    // "when" and "to" are named once, by the missing keys they stand for; "prio" on its own.
    expect(validateWorkflow(workflow).errors.map(({ code, message }) => [code, message])).toEqual([
      [
        'INVALID_NODE_CONFIG',
        'nodes[1].config.routes[1].condition: required but missing (expected string); the object has "when": did you mean "condition"?',
      ],
      [
        'INVALID_NODE_CONFIG',
        'nodes[1].config.routes[1].targetNodeId: required but missing (expected string); the object has "to": did you mean "targetNodeId"?',
      ],
      ['UNKNOWN_KEY', 'nodes[1].config.routes[1].prio: unknown key "prio"; did you mean "priority"?'],
    ]);
  });

  it('never offers a key the object rightly has as the missing one (variableName is not a misspelt variableType)', () => {
    const workflow = {
      ...linear(),
      variables: [{ name: 'count', type: 'number', initial: 0 }],
      nodes: [
        { id: 'start', type: 'START' },
        { id: 'inc', type: 'VARIABLE', config: { variableName: 'count', expression: 'count + 1' } },
        { id: 'end', type: 'END' },
      ],
      edges: [
        { from: 'start', to: 'inc' },
        { from: 'inc', to: 'end' },
      ],
    };
    expect(validateWorkflow(workflow).errors.map(({ code, message }) => [code, message])).toEqual([
      [
        'INVALID_NODE_CONFIG',
        'nodes[1].config.variableType: required but missing (expected one of "string"|"number"|"boolean"|"array"|"object"|"any")',
      ],
    ]);
  });

  it('names the keys of edges and tools that other frameworks spell differently (source/target, args, input_schema)', () => {
    const workflow = {
      ...linear(),
      tools: {
        add: {
          description: 'adds',
          input_schema: { type: 'object' },
          handler: { kind: 'code', code: 'return 1' },
        },
      },
      nodes: [
        { id: 'start', type: 'START' },
        { id: 'call', type: 'TOOL', config: { toolName: 'add', args: { a: 1 } } },
        { id: 'end', type: 'END' },
      ],
      edges: [
        { source: 'start', target: 'call' },
        { from: 'call', to: 'end' },
      ],
    };
    expect(validateWorkflow(workflow).errors.map(({ message }) => message)).toEqual([
      'edges[0].from: required but missing (expected string); the object has "source": did you mean "from"?',
      'edges[0].to: required but missing (expected string); the object has "target": did you mean "to"?',
      'tools.add.input_schema: unknown key "input_schema"; did you mean "parameters"?',
      'nodes[1].config.args: unknown key "args"; did you mean "arguments"?',
    ]);
  });

  it('reports the unknown keys of the nested objects of a node, tool or file that does not parse', () => {
    const workflow = {
      ...linear(),
      budget: { maxToken: 1000 },
      tools: { crm: { description: 7, handler: 'builtin:echo', requireApproval: true } },
      nodes: [
        { id: 'start', type: 'START' },
        {
          id: 'trim',
          type: 'CONTEXT_PROCESSOR',
          config: { op: 'truncate', truncate: { keepLsat: 2 } },
          hooks: [{ hookType: 'BEFORE_EXECUTE', eventName: 'trimming', when: 'true' }],
        },
        { id: 'end', type: 'END' },
      ],
      edges: [
        { from: 'start', to: 'trim' },
        { from: 'trim', to: 'end' },
      ],
    };
    expect(validateWorkflow(workflow).errors.map(({ code, path, message }) => [code, path, message])).toEqual(
      [
        [
          'SCHEMA_INVALID',
          'tools.crm.description',
          'tools.crm.description: Invalid input: expected string, received number',
        ],
        [
          'INVALID_CONTEXT_OPERATION',
          'nodes[1].config.operation',
          expect.stringMatching(/^nodes\[1\]\.config\.operation: required but missing/),
        ],
        [
          'UNKNOWN_KEY',
          'budget.maxToken',
          'budget.maxToken: unknown key "maxToken"; did you mean "maxTokens"?',
        ],
        [
          'UNKNOWN_KEY',
          'tools.crm.requireApproval',
          'tools.crm.requireApproval: unknown key "requireApproval"; did you mean "requiresApproval"?',
        ],
        ['UNKNOWN_KEY', 'nodes[1].config.op', 'nodes[1].config.op: unknown key "op"'],
        [
          'UNKNOWN_KEY',
          'nodes[1].config.truncate.keepLsat',
          'nodes[1].config.truncate.keepLsat: unknown key "keepLsat"; did you mean "keepLast"?',
        ],
        [
          'UNKNOWN_KEY',
          'nodes[1].hooks[0].when',
          'nodes[1].hooks[0].when: unknown key "when"; did you mean "condition"?',
        ],
      ],
    );
  });

  it('adds no error to a workflow that parses, and names a nested key among its own object first', () => {
    const workflow = {
      ...linear(),
      budget: { maxTokens: 1000 },
      tools: {
        crm: { description: 'CRM', handler: { kind: 'builtin', name: 'echo' }, requiresApproval: true },
      },
      nodes: [
        { id: 'start', type: 'START' },
        {
          id: 'route',
          type: 'ROUTE',
          config: { routes: [{ condition: 'true', targetNodeId: 'trim', priority: 1 }] },
          hooks: [{ hookType: 'BEFORE_EXECUTE', eventName: 'routing', if: 'true' }],
        },
        {
          id: 'trim',
          type: 'CONTEXT_PROCESSOR',
          config: { operation: 'truncate', truncate: { keepLast: 2 } },
        },
        { id: 'end', type: 'END' },
      ],
      edges: [
        { from: 'start', to: 'route' },
        { from: 'route', to: 'trim' },
        { from: 'trim', to: 'end' },
      ],
    };
    // "if" is one edit from a node's "id", but the hook's own keys come first.
    expect(validateWorkflow(workflow).errors.map(({ code, message }) => [code, message])).toEqual([
      ['UNKNOWN_KEY', 'nodes[1].hooks[0].if: unknown key "if"; did you mean "condition"?'],
    ]);
  });

  it('checks the expressions of a node that does not parse where their own fields parse, once each', () => {
    const workflow = {
      ...linear(),
      nodes: [
        { id: 'start', type: 'START' },
        {
          id: 'ask',
          type: 'LLM',
          config: { prompt: 'Hi {{input.name', profileId: 5 },
          hooks: [{ hookType: 'BEFORE_EXECUTE', eventName: 'asking', condition: 'variables.n >' }],
        },
        {
          id: 'route',
          type: 'ROUTE',
          config: {
            routes: [
              { condition: 'variables.n >', targetNodeId: 'end' },
              { condition: `${'x'.repeat(4097)} >`, targetNodeId: 'end' },
              { when: 'true', to: 'end' },
            ],
          },
        },
        { id: 'end', type: 'END' },
      ],
      edges: [
        { from: 'start', to: 'ask' },
        { from: 'ask', to: 'route' },
        { from: 'route', to: 'end' },
      ],
    };
    // The over-long condition has its size error only; the missing ones have nothing to read.
    expect(validateWorkflow(workflow).errors.map(({ code, path }) => [code, path])).toEqual([
      ['INVALID_NODE_CONFIG', 'nodes[1].config.profileId'],
      ['INVALID_NODE_CONFIG', 'nodes[2].config.routes[1].condition'],
      ['INVALID_NODE_CONFIG', 'nodes[2].config.routes[2].condition'],
      ['INVALID_NODE_CONFIG', 'nodes[2].config.routes[2].targetNodeId'],
      ['INVALID_EXPRESSION', 'nodes[1].config.prompt'],
      ['INVALID_EXPRESSION', 'nodes[1].hooks[0].condition'],
      ['INVALID_EXPRESSION', 'nodes[2].config.routes[0].condition'],
    ]);
  });

  it('reports a template reading a node that does not exist, with the id it most likely meant', () => {
    const workflow = linear();
    workflow.nodes[2] = {
      id: 'end',
      type: 'END',
      config: { output: '{{nodes.aks}} and {{nodes.ask}}' },
    } as never;
    const { errors } = validateWorkflow(workflow);
    expect(errors).toEqual([
      {
        code: 'UNKNOWN_NODE_REFERENCE',
        message: 'node end reads nodes.aks, but no node has that id; did you mean "ask"?',
        path: 'nodes[2]',
        nodeId: 'end',
      },
    ]);
  });

  it("says how to read a node whose id has a dash (nodes['keep-recent']), once, not as a node and a variable", () => {
    const workflow = {
      ...linear(),
      nodes: [
        { id: 'start', type: 'START' },
        {
          id: 'keep-recent',
          type: 'CONTEXT_PROCESSOR',
          config: { operation: 'truncate', truncate: { keepLast: 4 } },
        },
        { id: 'end', type: 'END', config: { output: "{{nodes.keep-recent}} {{nodes['keep-recent']}}" } },
      ],
      edges: [
        { from: 'start', to: 'keep-recent' },
        { from: 'keep-recent', to: 'end' },
      ],
    };
    expect(validateWorkflow(workflow).errors).toEqual([
      {
        code: 'UNKNOWN_NODE_REFERENCE',
        message:
          'node end reads nodes.keep, but no node has that id; "-" subtracts in an expression, so nodes.keep-recent reads nodes.keep minus the rest: write nodes[\'keep-recent\']',
        path: 'nodes[2]',
        nodeId: 'end',
      },
    ]);
  });

  it('reports an expression reading a name nothing defines, with the name it most likely meant', () => {
    const workflow = {
      ...linear(),
      variables: [{ name: 'ticket', type: 'string', initial: '' }],
      nodes: [
        { id: 'start', type: 'START' },
        {
          id: 'ask',
          type: 'LLM',
          config: { prompt: 'Classify {{tickte}} for {{input.customer}}', outputVariable: 'label' },
        },
        { id: 'end', type: 'END', config: { output: '{{label}} {{ticket}}' } },
      ],
    };
    const { errors } = validateWorkflow(workflow);
    expect(errors).toEqual([
      {
        code: 'UNKNOWN_VARIABLE_REFERENCE',
        message:
          'node ask reads "tickte", which no variable declaration, node or loop defines; did you mean "ticket"?',
        path: 'nodes[1]',
        nodeId: 'ask',
      },
    ]);
  });

  it.each([
    ['approved == True', 'True', 'did you mean "true"? (literals are lower case)'],
    ['approved == False', 'False', 'did you mean "false"? (literals are lower case)'],
    ['input.note == None', 'None', 'did you mean "null"?'],
    ['input.note === undefined', 'undefined', "test it with type(x) == 'undefined'"],
    ['$.input.name', '$', '"$" (JSONPath) is not a name here'],
  ])('says how %j is written here: %s is read as a variable nothing defines', (condition, name, hint) => {
    const workflow = {
      ...linear(),
      variables: [{ name: 'approved', type: 'boolean', initial: false }],
      nodes: [
        { id: 'start', type: 'START' },
        {
          id: 'check',
          type: 'ROUTE',
          config: { routes: [{ condition, targetNodeId: 'end' }], defaultTargetNodeId: 'end' },
        },
        { id: 'end', type: 'END' },
      ],
      edges: [{ from: 'start', to: 'check' }],
    };
    const { errors } = validateWorkflow(workflow);
    expect(errors).toEqual([
      {
        code: 'UNKNOWN_VARIABLE_REFERENCE',
        message: expect.stringContaining(`node check reads "${name}", which no variable declaration`),
        path: 'nodes[1]',
        nodeId: 'check',
      },
    ]);
    expect(errors[0]?.message).toContain(hint);
  });

  it('reports secrets and args outside http tools, and result outside AFTER hooks: they would render as nothing', () => {
    const workflow = {
      ...linear(),
      nodes: [
        { id: 'start', type: 'START' },
        {
          id: 'ask',
          type: 'LLM',
          config: { prompt: 'Use key={{secrets.API_KEY}}' },
          hooks: [
            { hookType: 'BEFORE_EXECUTE', eventName: 'before', eventPayload: { s: '{{result.status}}' } },
            { hookType: 'AFTER_EXECUTE', eventName: 'after', eventPayload: { s: '{{result.status}}' } },
          ],
        },
        { id: 'end', type: 'END', config: { output: '{{args.x}}' } },
      ],
    };
    const { errors } = validateWorkflow(workflow);
    expect(errors.map((error) => [error.code, error.nodeId, error.message])).toEqual([
      [
        'UNKNOWN_VARIABLE_REFERENCE',
        'ask',
        `node ask reads "secrets", which only an http tool's url, headers and body templates can read (secrets never enter a node's data)`,
      ],
      [
        'UNKNOWN_VARIABLE_REFERENCE',
        'ask',
        'node ask reads "result", which only its AFTER_EXECUTE hooks can read (the node\'s outcome)',
      ],
      [
        'UNKNOWN_VARIABLE_REFERENCE',
        'end',
        `node end reads "args", which only an http tool's url, headers and body templates can read (the arguments of its call)`,
      ],
    ]);
  });

  it('suggests mainPathId for a JOIN’s mainPath', () => {
    const { errors } = validateWorkflow({
      id: 'j',
      version: 1,
      nodes: [
        { id: 'start', type: 'START' },
        {
          id: 'split',
          type: 'FORK',
          config: { forkPathIds: ['a'], forkStrategy: 'parallel', childNodeIds: ['a1'] },
        },
        {
          id: 'a1',
          type: 'VARIABLE',
          config: { variableName: 'x', variableType: 'number', expression: '1' },
        },
        {
          id: 'merge',
          type: 'JOIN',
          config: { forkPathIds: ['a'], joinStrategy: 'ALL_COMPLETED', timeout: 0, mainPath: 'a' },
        },
        { id: 'end', type: 'END' },
      ],
      edges: [
        { from: 'start', to: 'split' },
        { from: 'a1', to: 'merge' },
        { from: 'merge', to: 'end' },
      ],
      variables: [{ name: 'x', type: 'number', initial: 0 }],
    });
    expect(errors.map((e) => e.message)).toContain(
      'nodes[3].config.mainPath: unknown key "mainPath"; did you mean "mainPathId"?',
    );
  });

  it('accepts a valid workflow and resolves maxSteps to the default', () => {
    const result = validateWorkflow(linear());
    expect(result.errors).toEqual([]);
    expect(result.valid).toBe(true);
    expect(result.workflow?.maxSteps).toBe(DEFAULT_MAX_STEPS);
  });

  it('reports path and nodeId for a problem inside a node config', () => {
    const workflow = linear();
    workflow.nodes[1] = {
      id: 'ask',
      type: 'FORK',
      config: { forkPathIds: [], forkStrategy: 'serial' },
    } as never;
    const { errors } = validateWorkflow(workflow);
    expect(errors).toContainEqual(
      expect.objectContaining({
        code: 'INVALID_FORK_PATH_IDS',
        path: 'nodes[1].config.childNodeIds',
        nodeId: 'ask',
      }),
    );
  });

  it('reports every error at once, structural and graph alike', () => {
    const workflow = linear() as ReturnType<typeof linear> & { id: string };
    workflow.id = 'has spaces';
    workflow.nodes.push({ id: 'orphan', type: 'END' });
    const codes = validateWorkflow(workflow).errors.map((error) => error.code);
    expect(codes.sort()).toEqual(['SCHEMA_INVALID', 'UNREACHABLE_NODE']);
  });

  it('still checks the graph when an unrelated node config is malformed', () => {
    const workflow = linear();
    workflow.nodes[1] = { id: 'ask', type: 'LLM', config: {} } as never;
    workflow.nodes.push({ id: 'stray', type: 'END' });
    const errors = validateWorkflow(workflow).errors;
    expect(errors.map((error) => [error.code, error.nodeId])).toEqual([
      ['INVALID_NODE_CONFIG', 'ask'],
      ['UNREACHABLE_NODE', 'stray'],
    ]);
  });

  it('skips flow checks when a flow-shaping node is unreadable, instead of echoing the error', () => {
    const workflow = linear();
    workflow.nodes[1] = { id: 'ask', type: 'ROUTE', config: { routes: 'nope' } } as never;
    expect(validateWorkflow(workflow).errors.map((error) => error.code)).toEqual(['INVALID_NODE_CONFIG']);
  });

  it('prefixes paths inside SUBGRAPH workflows and names the inner node', () => {
    const child = linear();
    child.nodes[1] = { id: 'ask', type: 'TOOL', config: { toolName: 'missing' } } as never;
    const parent = linear();
    parent.nodes.splice(2, 0, { id: 'sub', type: 'SUBGRAPH', config: { workflow: child } } as never);
    parent.edges = [
      { from: 'start', to: 'ask' },
      { from: 'ask', to: 'sub' },
      { from: 'sub', to: 'end' },
    ];
    expect(validateWorkflow(parent).errors).toEqual([
      expect.objectContaining({
        code: 'UNKNOWN_TOOL',
        nodeId: 'ask',
        path: 'nodes[2].config.workflow.nodes[1].config.toolName',
      }),
    ]);
  });

  it('lets a subgraph use profiles declared by the enclosing workflow', () => {
    const parent = linear();
    parent.nodes.splice(2, 0, {
      id: 'sub',
      type: 'SUBGRAPH',
      config: { workflow: { ...linear(), profiles: {} } },
    } as never);
    parent.edges = [
      { from: 'start', to: 'ask' },
      { from: 'ask', to: 'sub' },
      { from: 'sub', to: 'end' },
    ];
    expect(validateWorkflow(parent).errors).toEqual([]);
  });

  it('maps a structural error in a nested node to the specific code', () => {
    const child = linear();
    child.nodes[1] = { id: 'ask', type: 'CONTEXT_PROCESSOR', config: { operation: 'compress' } } as never;
    const parent = linear();
    parent.nodes.splice(2, 0, { id: 'sub', type: 'SUBGRAPH', config: { workflow: child } } as never);
    parent.edges = [
      { from: 'start', to: 'ask' },
      { from: 'ask', to: 'sub' },
      { from: 'sub', to: 'end' },
    ];
    expect(validateWorkflow(parent).errors).toEqual([
      expect.objectContaining({
        code: 'INVALID_CONTEXT_OPERATION',
        nodeId: 'ask',
        path: 'nodes[2].config.workflow.nodes[1].config.operation',
      }),
    ]);
  });

  it('rejects fork path ids reused by two different FORKs', () => {
    const fork = (id: string, children: string[]) => ({
      id,
      type: 'FORK',
      config: { forkPathIds: ['a', 'b'], forkStrategy: 'parallel', childNodeIds: children },
    });
    const join = (id: string) => ({
      id,
      type: 'JOIN',
      config: { forkPathIds: ['a', 'b'], joinStrategy: 'ALL_COMPLETED' },
    });
    const step = (id: string) => ({ id, type: 'CODE', config: { code: 'return 1;' } });
    const workflow = {
      id: 'twice',
      version: 1,
      nodes: [
        { id: 'start', type: 'START' },
        fork('f1', ['x1', 'y1']),
        step('x1'),
        step('y1'),
        join('j1'),
        fork('f2', ['x2', 'y2']),
        step('x2'),
        step('y2'),
        join('j2'),
        { id: 'end', type: 'END' },
      ],
      edges: [
        { from: 'start', to: 'f1' },
        { from: 'x1', to: 'j1' },
        { from: 'y1', to: 'j1' },
        { from: 'j1', to: 'f2' },
        { from: 'x2', to: 'j2' },
        { from: 'y2', to: 'j2' },
        { from: 'j2', to: 'end' },
      ],
    };
    const errors = validateWorkflow(workflow).errors;
    expect(errors.map((error) => [error.code, error.path])).toEqual([
      ['INVALID_FORK_PATH_IDS', 'nodes[5].config.forkPathIds[0]'],
      ['INVALID_FORK_PATH_IDS', 'nodes[5].config.forkPathIds[1]'],
    ]);
  });

  it('accepts an explicit edge that repeats an implicit one', () => {
    const workflow = linear();
    workflow.nodes.splice(1, 0, {
      id: 'route',
      type: 'ROUTE',
      config: { routes: [{ condition: 'true', targetNodeId: 'ask' }], defaultTargetNodeId: 'end' },
    } as never);
    workflow.edges = [
      { from: 'start', to: 'route' },
      { from: 'route', to: 'ask' },
      { from: 'ask', to: 'end' },
    ];
    expect(validateWorkflow(workflow).errors).toEqual([]);
  });

  it("says a LOOP_END's edge is the loop's exit when its only edge goes back to its LOOP_START", () => {
    const workflow = {
      ...linear(),
      nodes: [
        { id: 'start', type: 'START' },
        {
          id: 'each',
          type: 'LOOP_START',
          config: { loopId: 'l', dataSource: '{{input.items}}', maxIterations: 5 },
        },
        { id: 'work', type: 'CODE', config: { code: 'return 1' } },
        { id: 'next', type: 'LOOP_END', config: { loopId: 'l' } },
        { id: 'end', type: 'END' },
      ],
      edges: [
        { from: 'start', to: 'each' },
        { from: 'each', to: 'work' },
        { from: 'work', to: 'next' },
        { from: 'next', to: 'each' },
      ],
    };
    expect(validateWorkflow(workflow).errors.map(({ code, message }) => [code, message])).toEqual([
      ['UNREACHABLE_NODE', 'node "end" cannot be reached from START'],
      [
        'NO_PATH_TO_END',
        'nodes "each", "work", "next" loop among themselves with no way to an END; a LOOP_END goes back to its LOOP_START by itself, and its edge is the loop\'s exit: add an edge from "next" to the node after the loop',
      ],
    ]);
  });

  it("accepts a LOOP_END's explicit back edge beside its exit when the LOOP_START has an error of its own", () => {
    const workflow = {
      ...linear(),
      nodes: [
        { id: 'start', type: 'START' },
        { id: 'each', type: 'LOOP_START', config: { loopId: 'l', dataSource: '{{input.items}}' } },
        { id: 'work', type: 'CODE', config: { code: 'return 1' } },
        { id: 'next', type: 'LOOP_END', config: { loopId: 'l' } },
        { id: 'end', type: 'END' },
      ],
      edges: [
        { from: 'start', to: 'each' },
        { from: 'each', to: 'work' },
        { from: 'work', to: 'next' },
        { from: 'next', to: 'each' },
        { from: 'next', to: 'end' },
      ],
    };
    // Only the missing maxIterations: not "node next already continues to each" for the exit edge.
    expect(validateWorkflow(workflow).errors.map(({ code, path }) => [code, path])).toEqual([
      ['INVALID_MAX_ITERATIONS', 'nodes[1].config.maxIterations'],
    ]);
  });

  it('flags an explicit ROUTE edge that is not one of its targets', () => {
    const workflow = linear();
    workflow.nodes.splice(1, 0, {
      id: 'route',
      type: 'ROUTE',
      config: { routes: [{ condition: 'true', targetNodeId: 'ask' }] },
    } as never);
    workflow.edges = [
      { from: 'start', to: 'route' },
      { from: 'route', to: 'end' },
      { from: 'ask', to: 'end' },
    ];
    expect(validateWorkflow(workflow).errors.map((error) => error.code)).toEqual(['INVALID_EDGE']);
  });

  it('accepts nested fork/join regions', () => {
    const code = (id: string) => ({ id, type: 'CODE', config: { code: 'return 1;' } });
    const workflow = {
      id: 'nested',
      version: 1,
      nodes: [
        { id: 'start', type: 'START' },
        {
          id: 'outer',
          type: 'FORK',
          config: { forkPathIds: ['p', 'q'], forkStrategy: 'parallel', childNodeIds: ['inner', 'q1'] },
        },
        {
          id: 'inner',
          type: 'FORK',
          config: { forkPathIds: ['r', 's'], forkStrategy: 'serial', childNodeIds: ['r1', 's1'] },
        },
        code('r1'),
        code('s1'),
        {
          id: 'inner-join',
          type: 'JOIN',
          config: { forkPathIds: ['r', 's'], joinStrategy: 'ANY_COMPLETED' },
        },
        code('q1'),
        {
          id: 'outer-join',
          type: 'JOIN',
          config: { forkPathIds: ['p', 'q'], joinStrategy: 'ALL_COMPLETED' },
        },
        { id: 'end', type: 'END' },
      ],
      edges: [
        { from: 'start', to: 'outer' },
        { from: 'r1', to: 'inner-join' },
        { from: 's1', to: 'inner-join' },
        { from: 'inner-join', to: 'outer-join' },
        { from: 'q1', to: 'outer-join' },
        { from: 'outer-join', to: 'end' },
      ],
    };
    expect(validateWorkflow(workflow).errors).toEqual([]);
  });

  it("reads a LOOP_START's renamed item only by its name, and index in any loop", () => {
    const loop = (iterationVariable: string | undefined, prompt: string) => ({
      id: 'loop',
      version: 1,
      profiles: { default: { provider: 'scripted', responses: ['ok'] } },
      nodes: [
        { id: 'start', type: 'START' },
        {
          id: 'ls',
          type: 'LOOP_START',
          config: {
            loopId: 'L',
            dataSource: ['a'],
            maxIterations: 5,
            ...(iterationVariable ? { iterationVariable } : {}),
          },
        },
        { id: 'ask', type: 'LLM', config: { prompt } },
        { id: 'le', type: 'LOOP_END', config: { loopId: 'L' } },
        { id: 'end', type: 'END' },
      ],
      edges: [
        { from: 'start', to: 'ls' },
        { from: 'ls', to: 'ask' },
        { from: 'ask', to: 'le' },
        { from: 'le', to: 'end' },
      ],
    });
    expect(validateWorkflow(loop(undefined, '{{item}} {{index}}')).errors).toEqual([]);
    expect(validateWorkflow(loop('city', '{{city}} {{index}}')).errors).toEqual([]);
    expect(validateWorkflow(loop('city', '{{item}} {{index}}')).errors).toEqual([
      expect.objectContaining({
        code: 'UNKNOWN_VARIABLE_REFERENCE',
        nodeId: 'ask',
        message: expect.stringMatching(/reads "item".*did you mean "city"\?.*LOOP_START ls's item/),
      }),
    ]);
  });

  it('never throws and always returns coded errors, whatever the input', () => {
    fc.assert(
      fc.property(fc.anything(), (data) => {
        const result = validateWorkflow(data);
        expect(result.valid).toBe(result.errors.length === 0);
        for (const error of result.errors) expect(typeof error.code).toBe('string');
      }),
      { numRuns: 200 },
    );
    expect(validateWorkflow(null).errors.map((error) => error.code)).toEqual(['SCHEMA_INVALID']);
  });
});

describe('no follow-on noise', () => {
  it('names no node for a workflow without nodes', () => {
    const { errors } = validateWorkflow({ id: 'empty', version: 1, nodes: [], edges: [] });
    expect(errors.map(({ code, nodeId }) => ({ code, nodeId }))).toEqual([
      { code: 'START_NODE_COUNT', nodeId: undefined },
      { code: 'NO_PATH_TO_END', nodeId: undefined },
    ]);
  });

  it('says a left-out required field is missing, not that its value is wrong', () => {
    const { errors } = validateWorkflow({
      ...linear(),
      nodes: [
        { id: 'start', type: 'START' },
        { id: 'ask', type: 'LLM', config: {} },
        { id: 'end', type: 'END' },
      ],
    });
    expect(errors).toContainEqual(
      expect.objectContaining({ message: 'nodes[1].config.prompt: required but missing (expected string)' }),
    );
  });

  it('reports a LOOP_START missing maxIterations once, not its LOOP_END as unpaired too', () => {
    const { errors } = validateWorkflow({
      id: 'loop',
      version: 1,
      nodes: [
        { id: 'start', type: 'START' },
        { id: 'ls', type: 'LOOP_START', config: { loopId: 'L', dataSource: [1] } },
        { id: 'le', type: 'LOOP_END', config: { loopId: 'L' } },
        { id: 'end', type: 'END' },
      ],
      edges: [
        { from: 'start', to: 'ls' },
        { from: 'ls', to: 'le' },
        { from: 'le', to: 'end' },
      ],
    });
    expect(errors.map(({ code }) => code)).toEqual(['INVALID_MAX_ITERATIONS']);
  });
});

describe('parseWorkflow', () => {
  it('maps an unknown node type to UNKNOWN_NODE_TYPE with the node id', () => {
    const workflow = linear();
    workflow.nodes[1] = { id: 'ask', type: 'PROMPT' } as never;
    expect(parseWorkflow(workflow).errors).toEqual([
      expect.objectContaining({ code: 'UNKNOWN_NODE_TYPE', nodeId: 'ask', path: 'nodes[1].type' }),
    ]);
  });

  it("names the node type an unknown one most likely means: its case, a typo, another framework's word", () => {
    const meant = (type: string) => {
      const workflow = linear();
      workflow.nodes[1] = { id: 'ask', type } as never;
      const [error] = parseWorkflow(workflow).errors;
      return error?.message.match(/did you mean "([A-Z_]+)"/)?.[1];
    };
    expect(meant('llm')).toBe('LLM');
    expect(meant('Loop_Start')).toBe('LOOP_START');
    expect(meant('USER_INTERACTON')).toBe('USER_INTERACTION');
    expect(meant('router')).toBe('ROUTE');
    expect(meant('parallel')).toBe('FORK');
    expect(meant('human')).toBe('USER_INTERACTION');
    expect(meant('constructor')).toBeUndefined();
    expect(meant('PROMPT')).toBeUndefined();
  });

  it('maps a malformed inserted message to INVALID_MESSAGE and a missing one to MISSING_OPERATION_CONFIG', () => {
    const workflow = linear();
    workflow.nodes[1] = {
      id: 'ask',
      type: 'CONTEXT_PROCESSOR',
      config: { operation: 'replace', replace: { index: 0, message: { role: 'user' } } },
    } as never;
    expect(parseWorkflow(workflow).errors.map((error) => [error.code, error.path])).toEqual([
      ['INVALID_MESSAGE', 'nodes[1].config.replace.message.content'],
    ]);
    workflow.nodes[1] = {
      id: 'ask',
      type: 'CONTEXT_PROCESSOR',
      config: { operation: 'replace', replace: { index: 0 } },
    } as never;
    expect(parseWorkflow(workflow).errors.map((error) => error.code)).toEqual(['MISSING_OPERATION_CONFIG']);
  });
});

describe('inlined id collisions', () => {
  it('reports a node id that collides with a subgraph child once inlined', () => {
    const child = linear();
    const parent = linear();
    parent.nodes.splice(2, 0, { id: 'sub', type: 'SUBGRAPH', config: { workflow: child } } as never);
    parent.nodes.splice(3, 0, { id: 'sub.ask', type: 'CODE', config: { code: 'return 1;' } } as never);
    parent.edges = [
      { from: 'start', to: 'ask' },
      { from: 'ask', to: 'sub' },
      { from: 'sub', to: 'sub.ask' },
      { from: 'sub.ask', to: 'end' },
    ];
    expect(validateWorkflow(parent).errors).toEqual([
      expect.objectContaining({ code: 'DUPLICATE_NODE_ID', nodeId: 'sub.ask', path: 'nodes[3]' }),
    ]);
  });
});

describe('VARIABLE nodes are checked the way the runtime runs them', () => {
  const setting = (
    config: Record<string, unknown>,
    declaration: Record<string, unknown> = { name: 'n' },
  ) => ({
    id: 'vars',
    version: 1,
    variables: [declaration],
    nodes: [
      { id: 'start', type: 'START' },
      { id: 'set', type: 'VARIABLE', config: { variableName: 'n', variableType: 'number', ...config } },
      { id: 'end', type: 'END' },
    ],
    edges: [
      { from: 'start', to: 'set' },
      { from: 'set', to: 'end' },
    ],
  });
  const codes = (data: unknown) => validateWorkflow(data).errors.map((e) => e.code);

  it('treats an unscoped declaration as thread scope, as the runtime does', () => {
    const readonlyUnscoped = { name: 'n', type: 'number', readonly: true, initial: 1 };
    expect(codes(setting({ expression: '2', scope: 'thread' }, readonlyUnscoped))).toEqual([
      'INVALID_VARIABLE',
    ]);
    expect(codes(setting({ expression: '2', scope: 'global' }, readonlyUnscoped))).toEqual([]);
  });

  it('rejects text around a template, which the runtime cannot evaluate, and accepts a whole template', () => {
    expect(codes(setting({ expression: 'Hello {{n}}' }))).toEqual(['INVALID_EXPRESSION']);
    expect(codes(setting({ expression: '{{ n + 1 }}' }))).toEqual([]);
  });
});
