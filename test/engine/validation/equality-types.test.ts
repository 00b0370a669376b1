/**
 * `==` is strict (no conversion), so comparing a declared variable with a value of another
 * primitive type (`fee == "30"`, `fee` a number) is always false, or always true with `!=`: a route
 * or a breakCondition that never changes. `validate` refuses it with the comparison that was meant.
 */
import { describe, expect, it } from 'vitest';
import { validateWorkflow } from '../../../engine/validation/validate.ts';

const VARIABLES = [
  { name: 'fee', type: 'number', initial: 30 },
  { name: 'approved', type: 'boolean' },
  { name: 'name', type: 'string', initial: 'Ada' },
  { name: 'count', type: 'number' },
  { name: 'anything', type: 'any' },
  { name: 'loose' },
  { name: 'out', type: 'any' },
];

/** start → a VARIABLE node setting `out` to `expression` → end. */
function setting(expression: string) {
  return {
    id: 'equality',
    version: 1,
    variables: VARIABLES,
    nodes: [
      { id: 'start', type: 'START' },
      { id: 'check', type: 'VARIABLE', config: { variableName: 'out', variableType: 'any', expression } },
      { id: 'end', type: 'END' },
    ],
    edges: [
      { from: 'start', to: 'check' },
      { from: 'check', to: 'end' },
    ],
  };
}

const errorsOf = (expression: string) =>
  validateWorkflow(setting(expression)).errors.map(({ code, message, path, nodeId }) => ({
    code,
    message,
    path,
    nodeId,
  }));

describe('comparing declared variables with values of another type', () => {
  it.each([
    [
      'fee == "30"',
      'a number is never equal to a string (== does not convert types), so == (and ===) is always false: write fee == 30, or convert one side first, as in number(x) == 30 or string(x) == \'30\' ("fee" is declared number)',
    ],
    [
      'approved == "true"',
      'a boolean is never equal to a string (== does not convert types), so == (and ===) is always false: write approved == true, or convert one side first, as in number(x) == 30 or string(x) == \'30\' ("approved" is declared boolean)',
    ],
    [
      'name === 5',
      "a string is never equal to a number (== does not convert types), so == (and ===) is always false: write name == '5', or convert one side first, as in number(x) == 30 or string(x) == '30' (\"name\" is declared string)",
    ],
    [
      "count != '3'",
      'a number is never equal to a string (== does not convert types), so != (and !==) is always true: write count != 3, or convert one side first, as in number(x) == 30 or string(x) == \'30\' ("count" is declared number)',
    ],
    [
      'fee !== name',
      'a number is never equal to a string (== does not convert types), so != (and !==) is always true: convert one side first, as in number(x) == 30 or string(x) == \'30\' ("fee" is declared number, "name" is declared string)',
    ],
  ])('refuses %j as INVALID_EXPRESSION, naming the types and what to write', (expression, message) => {
    expect(errorsOf(expression)).toEqual([
      {
        code: 'INVALID_EXPRESSION',
        message: `Invalid expression ${JSON.stringify(expression)}: ${message}`,
        path: 'nodes[1]',
        nodeId: 'check',
      },
    ]);
  });

  it.each([
    'fee == 30',
    'approved == true',
    "name == '5'",
    'fee == count',
    'fee == null',
    'approved != null',
    "anything == '30'",
    "loose == '30'",
    'number(name) == 30',
    "string(fee) == '30'",
    "input.fee == '30'",
  ])('accepts %j: the types may match, or one side may be anything or null', (expression) => {
    expect(errorsOf(expression)).toEqual([]);
  });

  it('refuses the same comparison in a route condition and a prompt template', () => {
    const workflow = {
      id: 'routes',
      version: 1,
      variables: VARIABLES,
      profiles: { default: { provider: 'scripted', byNode: { ask: ['yes'] } } },
      nodes: [
        { id: 'start', type: 'START' },
        {
          id: 'pick',
          type: 'ROUTE',
          config: {
            routes: [{ condition: 'approved == "true"', targetNodeId: 'ask' }],
            defaultTargetNodeId: 'end',
          },
        },
        { id: 'ask', type: 'LLM', config: { prompt: 'Refund? {{ fee == "30" ? "yes" : "no" }}' } },
        { id: 'end', type: 'END' },
      ],
      edges: [
        { from: 'start', to: 'pick' },
        { from: 'pick', to: 'ask' },
        { from: 'pick', to: 'end' },
        { from: 'ask', to: 'end' },
      ],
    };
    expect(validateWorkflow(workflow).errors.map(({ code, path }) => `${code} ${path}`)).toEqual([
      'INVALID_EXPRESSION nodes[1]',
      'INVALID_EXPRESSION nodes[2]',
    ]);
  });
});
