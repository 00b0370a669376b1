import { describe, expect, it } from 'vitest';
import { stdioServerProblems } from '../../../engine/validation/mcp-rules.ts';
import { validateWorkflow } from '../../../engine/validation/validate.ts';

function withTools(tools: Record<string, unknown>, nodes: unknown[] = []) {
  return {
    id: 'mcp',
    version: 1,
    profiles: { default: { provider: 'scripted' } },
    tools,
    nodes: [
      { id: 'start', type: 'START' },
      ...nodes,
      { id: 'agent', type: 'LLM', config: { prompt: 'hi', tools: Object.keys(tools) } },
      { id: 'end', type: 'END' },
    ],
    edges: [
      ...(nodes.length > 0
        ? [
            { from: 'start', to: (nodes[0] as { id: string }).id },
            { from: (nodes[0] as { id: string }).id, to: 'agent' },
          ]
        : [{ from: 'start', to: 'agent' }]),
      { from: 'agent', to: 'end' },
    ],
  };
}

const errors = (data: unknown) =>
  validateWorkflow(data).errors.map(({ code, path, message }) => ({ code, path, message }));

describe('validateWorkflow: mcp tools', () => {
  it('accepts a url server, a stdio server and a server entry, without description or parameters', () => {
    const result = validateWorkflow(
      withTools({
        sum: { handler: { kind: 'mcp', url: 'https://mcp.example.com/mcp', tool: 'add' } },
        local: {
          handler: { kind: 'mcp', command: ['node', 'server.mjs'], tool: 'add', env: { T: '{{secrets.T}}' } },
        },
        shop: {
          handler: {
            kind: 'mcp',
            url: 'https://mcp.example.com/mcp?key={{secrets.KEY}}',
            headers: { Authorization: 'Bearer {{secrets.TOKEN}}' },
            tools: ['greet'],
            timeoutMs: 5000,
          },
        },
      }),
    );
    expect(result.errors).toEqual([]);
  });

  it('names a misspelt field of an mcp handler, with the one it most likely meant', () => {
    expect(
      errors(withTools({ s: { handler: { kind: 'mcp', url: 'https://a.example/mcp', tol: 'x' } } })),
    ).toEqual([
      {
        code: 'UNKNOWN_KEY',
        path: 'tools.s.handler.tol',
        message: 'tools.s.handler.tol: unknown key "tol" for a mcp handler; did you mean "tool"?',
      },
    ]);
  });

  it('still requires a description of every other kind of tool', () => {
    expect(errors(withTools({ echo: { handler: 'builtin:echo' } }))).toEqual([
      {
        code: 'INVALID_TOOL_DEFINITION',
        path: 'tools.echo.description',
        message: 'tool "echo": needs a "description" (only mcp tools may take theirs from the server)',
      },
    ]);
  });

  it('reports a server given both ways or neither, and options of the other way', () => {
    expect(
      errors(
        withTools({
          both: { handler: { kind: 'mcp', url: 'https://a.example/mcp', command: ['x'], tool: 't' } },
          neither: { handler: { kind: 'mcp', tool: 't', headers: { A: 'b' }, allowPrivateNetwork: true } },
          stdio: { handler: { kind: 'mcp', command: ['x'], tool: 't', headers: { A: 'b' } } },
          remote: { handler: { kind: 'mcp', url: 'https://a.example/mcp', tool: 't', env: { A: 'b' } } },
        }),
      ).map(({ path, message }) => [path, message.replace(/^tool "\w+": /, '')]),
    ).toEqual([
      [
        'tools.both.handler',
        'an mcp handler needs "url" (a Streamable HTTP server) or "command" (a local stdio server), exactly one',
      ],
      [
        'tools.neither.handler',
        'an mcp handler needs "url" (a Streamable HTTP server) or "command" (a local stdio server), exactly one',
      ],
      ['tools.neither.handler.headers', '"headers" applies to a "url" server only'],
      ['tools.neither.handler.allowPrivateNetwork', '"allowPrivateNetwork" applies to a "url" server only'],
      ['tools.stdio.handler.headers', '"headers" applies to a "url" server only'],
      ['tools.remote.handler.env', '"env" applies to a "command" (stdio) server only'],
    ]);
  });

  it('reports templates that read args, compute a secret or choose the host', () => {
    const found = errors(
      withTools({
        a: { handler: { kind: 'mcp', url: 'https://a.example/{{args.path}}', tool: 't' } },
        b: { handler: { kind: 'mcp', url: 'https://{{secrets.HOST}}/mcp', tool: 't' } },
        c: {
          handler: {
            kind: 'mcp',
            url: 'https://a.example/mcp',
            tool: 't',
            headers: { X: '{{secrets[args.k]}}' },
          },
        },
      }),
    );
    expect(found.map(({ path }) => path)).toEqual([
      'tools.a.handler.url',
      'tools.b.handler.url',
      'tools.c.handler.headers.X',
      'tools.c.handler.headers.X',
    ]);
    expect(found[0]?.message).toContain('they may read secrets, not args');
    expect(found[1]?.message).toContain('must give its host and port as literal text');
    expect(found.map(({ code }) => code)).toEqual(Array(4).fill('INVALID_TOOL_DEFINITION'));
  });

  it('reports a server entry given a description or parameters, or both "tool" and "tools"', () => {
    const found = errors(
      withTools({
        shop: {
          description: 'A shop',
          parameters: { type: 'object' },
          handler: { kind: 'mcp', url: 'https://a.example/mcp' },
        },
        one: { handler: { kind: 'mcp', url: 'https://a.example/mcp', tool: 'a', tools: ['a'] } },
      }),
    );
    expect(found.map(({ path }) => path)).toEqual([
      'tools.shop.description',
      'tools.shop.parameters',
      'tools.one.handler.tools',
    ]);
  });

  it('refuses a TOOL node that names a server entry: it calls one tool', () => {
    const data = withTools({ shop: { handler: { kind: 'mcp', url: 'https://a.example/mcp' } } }, [
      { id: 'call', type: 'TOOL', config: { toolName: 'shop' } },
    ]);
    expect(errors(data)).toEqual([
      {
        code: 'INVALID_NODE_CONFIG',
        path: 'nodes[1].config.toolName',
        message: expect.stringContaining('is an MCP server entry (no "tool"): a TOOL node calls one tool'),
      },
    ]);
  });

  it('names each stdio server, subgraphs included, as MCP_STDIO_NOT_DEPLOYABLE', () => {
    const child = withTools({ inner: { handler: { kind: 'mcp', command: ['node', 'b.mjs'], tool: 't' } } });
    const data = withTools({ outer: { handler: { kind: 'mcp', command: ['node', 'a.mjs'], tool: 't' } } }, [
      { id: 'sub', type: 'SUBGRAPH', config: { workflow: { ...child, id: 'child' } } },
    ]);
    const result = validateWorkflow(data);
    expect(result.errors).toEqual([]);
    expect(stdioServerProblems(result.workflow!).map(({ code, path }) => [code, path])).toEqual([
      ['MCP_STDIO_NOT_DEPLOYABLE', 'tools.outer.handler.command'],
      ['MCP_STDIO_NOT_DEPLOYABLE', 'nodes[1].config.workflow.tools.inner.handler.command'],
    ]);
  });
});
