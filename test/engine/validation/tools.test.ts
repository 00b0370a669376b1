import { describe, expect, it } from 'vitest';
import type { ToolDefinition } from '../../../engine/model/schema.ts';
import { parseToolHandler } from '../../../engine/model/tool-handler.ts';
import { templateReferences } from '../../../engine/validation/tool-rules.ts';
import { validateWorkflow } from '../../../engine/validation/validate.ts';

function withTools(tools: Record<string, unknown>) {
  return {
    id: 'tools',
    version: 1,
    variables: [{ name: 'customer', type: 'string', initial: '' }],
    tools,
    nodes: [
      { id: 'start', type: 'START' },
      { id: 'call', type: 'TOOL', config: { toolName: 'crm', arguments: { id: '{{customer}}' } } },
      { id: 'end', type: 'END' },
    ],
    edges: [
      { from: 'start', to: 'call' },
      { from: 'call', to: 'end' },
    ],
  };
}

const crm = (handler: unknown, parameters?: unknown) => ({
  crm: { description: 'CRM lookup', handler, ...(parameters === undefined ? {} : { parameters }) },
});

describe('tool handler forms', () => {
  it('reads the string forms into the object forms', () => {
    expect(parseToolHandler('lambda:arn:aws:lambda:eu-west-1:1:function:f')).toEqual({
      ok: true,
      handler: { kind: 'lambda', arn: 'arn:aws:lambda:eu-west-1:1:function:f' },
    });
    expect(parseToolHandler('module:./tools/crm.js#lookup')).toEqual({
      ok: true,
      handler: { kind: 'lambda', module: { path: './tools/crm.js', exportName: 'lookup' } },
    });
    expect(parseToolHandler('module:./crm.js')).toEqual({
      ok: true,
      handler: { kind: 'lambda', module: { path: './crm.js', exportName: 'handler' } },
    });
    expect(parseToolHandler('builtin:echo')).toEqual({
      ok: true,
      handler: { kind: 'builtin', name: 'echo' },
    });
  });

  it('rejects strings and objects that name no target', () => {
    expect(parseToolHandler('ftp:x').ok).toBe(false);
    expect(parseToolHandler('builtin:rm').ok).toBe(false);
    expect(parseToolHandler({ kind: 'lambda' })).toEqual({
      ok: false,
      message: 'a lambda handler needs "arn" (on AWS) or "module" (locally), or both',
    });
    expect(parseToolHandler({ kind: 'lambda', arn: 'f', export: 'x' }).ok).toBe(false);
  });
});

describe('validateWorkflow: tools', () => {
  it('accepts every handler kind', () => {
    for (const handler of [
      'builtin:echo',
      'lambda:arn:aws:lambda:eu-west-1:123456789012:function:crm',
      'module:./crm.mjs#lookup',
      { kind: 'lambda', arn: 'arn:aws:lambda:eu-west-1:123456789012:function:crm', module: './crm.mjs' },
      {
        kind: 'http',
        url: 'https://crm.example.com/customers/{{args.id}}',
        method: 'GET',
        headers: { Authorization: 'Bearer {{secrets.CRM_TOKEN}}' },
        timeoutMs: 5000,
      },
      { kind: 'code', code: 'return input.id;', timeoutMs: 100, memoryLimitMb: 16 },
    ]) {
      expect(validateWorkflow(withTools(crm(handler))).errors, JSON.stringify(handler)).toEqual([]);
    }
  });

  it('reports an unknown handler string as SCHEMA_INVALID, and names the field a handler object gets wrong', () => {
    expect(validateWorkflow(withTools(crm('python:crm.py'))).errors.map((e) => e.code)).toEqual([
      'SCHEMA_INVALID',
    ]);
    const errorsOf = (handler: unknown) =>
      validateWorkflow(withTools(crm(handler))).errors.map(({ code, message }) => ({ code, message }));
    expect(errorsOf({ kind: 'http', url: 'https://x', headrs: {} })).toEqual([
      {
        code: 'UNKNOWN_KEY',
        message: 'tools.crm.handler.headrs: unknown key "headrs" for a http handler; did you mean "headers"?',
      },
    ]);
    expect(errorsOf({ kind: 'code', code: 'return 1', timeout: 5 })).toEqual([
      {
        code: 'UNKNOWN_KEY',
        message:
          'tools.crm.handler.timeout: unknown key "timeout" for a code handler; did you mean "timeoutMs"?',
      },
    ]);
    expect(errorsOf({ kind: 'htpp', url: 'https://x' })).toEqual([
      {
        code: 'SCHEMA_INVALID',
        message:
          'tools.crm.handler.kind: must be one of "lambda", "http", "code", "builtin", "mcp", got "htpp"; did you mean "http"?',
      },
    ]);
    expect(errorsOf({ kind: 'http', url: 'https://x', method: 'get' })).toEqual([
      {
        code: 'SCHEMA_INVALID',
        message: expect.stringMatching(/^tools\.crm\.handler\.method: .*; did you mean "GET"\?$/),
      },
    ]);
  });

  it('reports a lambda handler with no target, with its path', () => {
    expect(validateWorkflow(withTools(crm({ kind: 'lambda' }))).errors).toEqual([
      {
        code: 'INVALID_TOOL_DEFINITION',
        message: 'tool "crm": a lambda handler needs "arn" (on AWS) or "module" (locally), or both',
        path: 'tools.crm.handler',
      },
    ]);
  });

  it('reports parameters that do not describe an arguments object', () => {
    const errors = validateWorkflow(
      withTools(crm('builtin:echo', { type: 'array', properties: { a: 3 }, required: 'a' })),
    ).errors;
    expect(errors.map((e) => [e.code, e.path])).toEqual([
      ['INVALID_TOOL_DEFINITION', 'tools.crm.parameters'],
      ['INVALID_TOOL_DEFINITION', 'tools.crm.parameters'],
      ['INVALID_TOOL_DEFINITION', 'tools.crm.parameters'],
    ]);
  });

  it('reports http templates that compute a secret, expose all of them, read other names or do not parse', () => {
    const handler = {
      kind: 'http',
      url: 'crm.example.com/{{ticket}}',
      headers: { 'X-A': '{{secrets[args.name]}}', 'X-B': '{{secrets}}', 'X-C': '{{args.id' },
    };
    const errors = validateWorkflow(withTools(crm(handler))).errors;
    expect(errors.map((e) => [e.code, e.path])).toEqual([
      ['INVALID_TOOL_DEFINITION', 'tools.crm.handler.url'],
      ['INVALID_TOOL_DEFINITION', 'tools.crm.handler.headers["X-A"]'],
      ['INVALID_TOOL_DEFINITION', 'tools.crm.handler.headers["X-B"]'],
      ['INVALID_TOOL_DEFINITION', 'tools.crm.handler.headers["X-C"]'],
      ['INVALID_TOOL_DEFINITION', 'tools.crm.handler.url'],
    ]);
    expect(errors[0]?.message).toContain('reads "ticket"');
    expect(errors[4]?.message).toContain('must start with http:// or https://');
  });

  it('refuses an http url whose scheme, host or port a template could choose, or that carries credentials', () => {
    const messages = (url: string) =>
      validateWorkflow(withTools(crm({ kind: 'http', url }))).errors.map((e) => [e.code, e.path, e.message]);
    for (const url of [
      '{{args.url}}',
      'https://{{args.host}}/x',
      'https://crm.example.com{{args.path}}',
      'https://crm.example.com:{{args.port}}/x',
      'http://user:{{secrets.TOKEN}}@crm.example.com/x',
    ]) {
      const [only, ...rest] = messages(url);
      expect(rest, url).toEqual([]);
      expect(only?.slice(0, 2), url).toEqual(['INVALID_TOOL_DEFINITION', 'tools.crm.handler.url']);
    }
    expect(messages('https://crm.example.com/{{args.path}}')).toEqual([]);
    expect(messages('https://crm.example.com:8443?q={{args.q}}')).toEqual([]);
    expect(messages('https://crm.example.com')).toEqual([]);
    const host = { kind: 'http', url: 'https://crm.example.com/x', headers: { Host: '{{args.site}}' } };
    expect(validateWorkflow(withTools(crm(host))).errors.map((e) => [e.code, e.path])).toEqual([
      ['INVALID_TOOL_DEFINITION', 'tools.crm.handler.headers.Host'],
    ]);
  });

  it('checks tools declared inside a subgraph too', () => {
    const child = withTools(crm({ kind: 'lambda' }));
    const parent = {
      id: 'parent',
      version: 1,
      nodes: [
        { id: 'start', type: 'START' },
        { id: 'sub', type: 'SUBGRAPH', config: { workflow: child } },
        { id: 'end', type: 'END' },
      ],
      edges: [
        { from: 'start', to: 'sub' },
        { from: 'sub', to: 'end' },
      ],
    };
    expect(validateWorkflow(parent).errors).toEqual([
      expect.objectContaining({
        code: 'INVALID_TOOL_DEFINITION',
        path: 'nodes[1].config.workflow.tools.crm.handler',
      }),
    ]);
  });
});

describe('templateReferences', () => {
  it('lists each literally named secret once', () => {
    expect(templateReferences('{{secrets.A}}:{{secrets["b/c"]}}:{{secrets.A}}:{{upper(args.x)}}')).toEqual({
      secrets: ['A', 'b/c'],
      problems: [],
    });
  });
});

// The definition type accepts both handler forms.
const _typed: ToolDefinition[] = [
  { description: 'a', handler: 'builtin:echo' },
  { description: 'b', handler: { kind: 'http', url: 'https://x' } },
];
void _typed;

describe('validateWorkflow: requiresApproval', () => {
  const gated = (requiresApproval: unknown) =>
    withTools({ crm: { description: 'CRM lookup', handler: 'builtin:echo', requiresApproval } });
  const errorsOf = (requiresApproval: unknown) =>
    validateWorkflow(gated(requiresApproval)).errors.map(({ code, message, path }) => ({
      code,
      message,
      path,
    }));

  it('takes true, false or an expression over args', () => {
    for (const rule of [true, false, 'args.amount > 100', "contains(args.id, 'VIP') || len(args) > 2"]) {
      expect(errorsOf(rule), JSON.stringify(rule)).toEqual([]);
    }
  });

  it('refuses an expression that does not parse (INVALID_EXPRESSION) or reads more than args, naming the field', () => {
    expect(errorsOf('args.amount >')).toEqual([
      {
        code: 'INVALID_EXPRESSION',
        message: expect.stringMatching(/^tool "crm": requiresApproval: /),
        path: 'tools.crm.requiresApproval',
      },
    ]);
    expect(errorsOf('amount > 100 && input.vip')).toEqual([
      {
        code: 'INVALID_TOOL_DEFINITION',
        message:
          'tool "crm": requiresApproval reads "amount"; only args (the call\'s arguments) is available',
        path: 'tools.crm.requiresApproval',
      },
      {
        code: 'INVALID_TOOL_DEFINITION',
        message: 'tool "crm": requiresApproval reads "input"; only args (the call\'s arguments) is available',
        path: 'tools.crm.requiresApproval',
      },
    ]);
    expect(errorsOf('')).toEqual([expect.objectContaining({ code: 'SCHEMA_INVALID' })]);
    expect(errorsOf(1)).toEqual([expect.objectContaining({ code: 'SCHEMA_INVALID' })]);
  });
});
