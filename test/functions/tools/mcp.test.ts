/**
 * `mcp` tools against MCP servers built with the SDK: one over Streamable HTTP on 127.0.0.1 and one
 * over stdio. Calls, result mapping, isError, the egress policy, secrets, definitions from tools/list.
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { McpToolHandler, ToolDefinition } from '../../../engine/model/schema.ts';
import { createToolExecutor, type ToolResult } from '../../../functions/tools/index.ts';
import { openToolStep } from '../../../functions/tools/mcp-step.ts';
import { type McpTestServer, startMcpServer } from '../../support/mcp-server.ts';

const FIXTURES = join(import.meta.dirname, 'fixtures');
let server: McpTestServer;
beforeAll(async () => {
  server = await startMcpServer();
});
afterAll(async () => {
  await server.close();
});
beforeEach(() => {
  server.requests.length = 0;
  server.calls.length = 0;
});

function mcp(tool: string | undefined, extra: Partial<McpToolHandler> = {}): McpToolHandler {
  return {
    kind: 'mcp',
    url: server.url,
    ...(tool === undefined ? {} : { tool }),
    // The test server listens on loopback.
    allowPrivateNetwork: true,
    ...extra,
  };
}

function tool(handler: McpToolHandler, definition: Partial<ToolDefinition> = {}): ToolDefinition {
  return { description: 'declared', parameters: { type: 'object' }, ...definition, handler };
}

async function call(
  tools: Record<string, ToolDefinition>,
  name: string,
  args: unknown,
  secrets: Record<string, string> = {},
): Promise<ToolResult> {
  const executor = createToolExecutor({
    tools,
    env: { target: 'local', workflowDir: FIXTURES },
    secrets: { resolve: async (key) => secrets[key] },
  });
  try {
    return await executor.execute(name, args);
  } finally {
    await executor.close();
  }
}

describe('mcp tools over Streamable HTTP', () => {
  it('calls the named tool: its structured content is the output, its text what the model reads', async () => {
    const result = await call({ sum: tool(mcp('add')) }, 'sum', { a: 2, b: 3 });
    expect(result).toEqual({ ok: true, output: { sum: 5 }, content: '5' });
    expect(server.calls).toEqual([{ tool: 'add', args: { a: 2, b: 3 } }]);
    expect(server.methods()).toEqual(['initialize', 'notifications/initialized', 'tools/call']);
  });

  it('gives a text result as a string, and describes images and resources for the model', async () => {
    expect(await call({ hi: tool(mcp('greet')) }, 'hi', { name: 'Ada' })).toEqual({
      ok: true,
      output: 'Hello, Ada!',
      content: 'Hello, Ada!',
    });
    const picture = await call({ draw: tool(mcp('picture')) }, 'draw', {});
    if (!picture.ok) throw new Error(picture.error.message);
    expect(picture.content).toBe('A pixel:\n[image: image/png, 70 bytes]\n[resource file:///notes.txt]\nred');
    expect(picture.output).toMatchObject({
      content: [{ type: 'text' }, { type: 'image', mimeType: 'image/png' }, { type: 'resource' }],
    });
  });

  it('turns isError: true into the tool’s failure, with the server’s text', async () => {
    const result = await call({ refund: tool(mcp('refund')) }, 'refund', { order: 'A-17' });
    expect(result).toEqual({
      ok: false,
      error: { code: 'TOOL_FAILED', message: 'tool "refund" reported an error: order A-17 is locked' },
    });
  });

  it('refuses a server on a private address without allowPrivateNetwork, before any request', async () => {
    const result = await call({ sum: tool(mcp('add', { allowPrivateNetwork: false })) }, 'sum', {
      a: 1,
      b: 1,
    });
    expect(result.ok).toBe(false);
    expect(result.ok ? undefined : result.error.code).toBe('TOOL_EGRESS_DENIED');
    expect(server.requests).toEqual([]);
  });

  it('refuses a host name that resolves to a private address', async () => {
    const executor = createToolExecutor({
      tools: { sum: tool(mcp('add', { allowPrivateNetwork: false, url: 'http://mcp.example.test/mcp' })) },
      env: { target: 'local', resolveAll: async () => [{ address: '10.0.0.7', family: 4 }] },
    });
    const result = await executor.execute('sum', { a: 1, b: 1 });
    await executor.close();
    expect(result.ok ? undefined : result.error).toMatchObject({
      code: 'TOOL_EGRESS_DENIED',
      message: expect.stringContaining('mcp.example.test resolves to 10.0.0.7'),
    });
  });

  it('sends a secret header to the server and redacts it from what the server sends back', async () => {
    const handler = mcp('whoami', { headers: { Authorization: 'Bearer {{secrets.MCP_TOKEN}}' } });
    const result = await call({ who: tool(handler) }, 'who', {}, { MCP_TOKEN: 's3cr3t-token' });
    expect(server.requests.every((r) => r.headers.authorization === 'Bearer s3cr3t-token')).toBe(true);
    expect(result).toEqual({
      ok: true,
      output: 'you are Bearer [REDACTED]',
      content: 'you are Bearer [REDACTED]',
    });
  });

  it('fails with TOOL_FAILED when a secret the headers name is not set', async () => {
    const handler = mcp('whoami', { headers: { Authorization: 'Bearer {{secrets.MISSING}}' } });
    const result = await call({ who: tool(handler) }, 'who', {});
    expect(result.ok ? undefined : result.error.message).toContain('secret "MISSING" is not set');
    expect(server.requests).toEqual([]);
  });

  it('reports a server that answers with an HTTP error as TOOL_HTTP_ERROR', async () => {
    const result = await call(
      { sum: tool(mcp('add', { url: server.url.replace('/mcp', '/nowhere') })) },
      'sum',
      {
        a: 1,
        b: 2,
      },
    );
    expect(result.ok ? undefined : result.error).toMatchObject({ code: 'TOOL_HTTP_ERROR', status: 404 });
  });

  it('follows a redirect within the origin, and refuses one to another origin', async () => {
    const moved = await call(
      { sum: tool(mcp('add', { url: server.url.replace('/mcp', '/moved') })) },
      'sum',
      {
        a: 1,
        b: 2,
      },
    );
    expect(moved).toMatchObject({ ok: true, output: { sum: 3 } });
    server.requests.length = 0;
    const away = await call({ sum: tool(mcp('add', { url: server.url.replace('/mcp', '/away') })) }, 'sum', {
      a: 1,
      b: 2,
    });
    expect(away.ok ? undefined : away.error).toMatchObject({ code: 'TOOL_REDIRECT_REFUSED', status: 307 });
    // Only the redirect itself: the other origin was never called.
    expect(server.requests.map((r) => r.path)).toEqual(['/away']);
  });

  it('caps what it reads of a response (TOOL_RESPONSE_TOO_LARGE)', async () => {
    const executor = createToolExecutor({
      tools: { sum: tool(mcp('add')) },
      env: { target: 'local', maxOutputBytes: 100 },
    });
    const result = await executor.execute('sum', { a: 1, b: 2 });
    await executor.close();
    expect(result.ok ? undefined : result.error.code).toBe('TOOL_RESPONSE_TOO_LARGE');
  });

  it('reports a tool the server does not have as the tool’s failure', async () => {
    const result = await call({ nope: tool(mcp('nope')) }, 'nope', {});
    expect(result.ok ? undefined : result.error.code).toBe('TOOL_FAILED');
    expect(result.ok ? undefined : result.error.message).toContain('tool "nope"');
  });
});

describe('definitions from tools/list', () => {
  const step = (tools: Record<string, ToolDefinition>, contextData: Record<string, unknown> = {}) =>
    openToolStep({
      nodeId: 'agent',
      tools,
      contextData,
      env: { target: 'local' },
      secrets: undefined,
      signal: undefined,
    });

  it('fills a left-out description and parameters from the server, and records what it listed', async () => {
    const opened = await step({ sum: { handler: mcp('add') } });
    await opened.close();
    expect(opened.tools.sum).toEqual({
      description: 'Adds two numbers',
      parameters: expect.objectContaining({ type: 'object', required: ['a', 'b'] }),
      handler: mcp('add'),
    });
    expect(opened.tools.sum?.parameters).not.toHaveProperty('$schema');
    expect(opened.recorded).toEqual({
      sum: [{ name: 'add', description: 'Adds two numbers', inputSchema: opened.tools.sum?.parameters }],
    });
    expect(server.methods()).toContain('tools/list');
  });

  it('uses a recorded list instead of asking the server again, and declared fields over listed ones', async () => {
    const recorded = {
      sum: [{ name: 'add', description: 'as recorded', inputSchema: { type: 'object', properties: {} } }],
    };
    const opened = await step({ sum: { description: 'mine', handler: mcp('add') } }, { mcpTools: recorded });
    await opened.close();
    expect(opened.tools.sum).toMatchObject({ description: 'mine', parameters: recorded.sum[0]?.inputSchema });
    expect(opened.recorded).toBeUndefined();
    expect(server.requests).toEqual([]);
  });

  it('lists again when the record lacks a tool the entry names (the workflow changed before a resume)', async () => {
    const recorded = { sum: [{ name: 'add', inputSchema: { type: 'object' } }] };
    const opened = await step({ sum: { handler: mcp('greet') } }, { mcpTools: recorded });
    await opened.close();
    expect(opened.tools.sum?.description).toBe('Greets someone by name');
    expect(opened.recorded?.sum?.map((t) => t.name)).toEqual(['greet']);
  });

  it('does not list a server whose tools are declared in full', async () => {
    const opened = await step({ sum: tool(mcp('add')) });
    await opened.close();
    expect(opened.recorded).toBeUndefined();
    expect(server.requests).toEqual([]);
  });

  it('expands a server entry into <entry>_<tool>, narrowed by its allow-list', async () => {
    const all = await step({ shop: { handler: mcp(undefined) } });
    await all.close();
    expect(Object.keys(all.tools)).toEqual([
      'shop_add',
      'shop_greet',
      'shop_refund',
      'shop_picture',
      'shop_whoami',
    ]);
    expect(all.tools.shop_greet?.handler).toEqual(mcp('greet'));
    const some = await step({ shop: { handler: mcp(undefined, { tools: ['greet', 'add'] }) } });
    await some.close();
    expect(Object.keys(some.tools)).toEqual(['shop_greet', 'shop_add']);
    expect(some.recorded?.shop?.map((t) => t.name)).toEqual(['add', 'greet']);
  });

  it('fails the node with TOOL_NOT_FOUND when the server lacks the tool', async () => {
    await expect(step({ x: { handler: mcp('missing') } })).rejects.toMatchObject({
      code: 'TOOL_NOT_FOUND',
      nodeId: 'agent',
      message: expect.stringContaining('offers no tool "missing"'),
    });
  });
});

describe('mcp tools over stdio', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'stepthread-mcp-stdio-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  const stdio = (tool: string, env: Record<string, string> = {}): McpToolHandler => ({
    kind: 'mcp',
    command: ['node', 'mcp-stdio-server.mjs'],
    tool,
    env: { MCP_CALLS_FILE: join(dir, 'calls.jsonl'), ...env },
  });

  it('starts the server from the workflow’s folder and calls its tool, a secret in its env', async () => {
    const result = await call({ sum: tool(stdio('add')) }, 'sum', { a: 4, b: 5 });
    expect(result).toEqual({ ok: true, output: { sum: 9 }, content: '9' });
    const who = await call(
      { who: tool(stdio('whoami', { TEST_TOKEN: '{{secrets.STDIO_TOKEN}}' })) },
      'who',
      {},
      { STDIO_TOKEN: 'stdio-secret-1' },
    );
    expect(who).toEqual({ ok: true, output: 'you are [REDACTED]', content: 'you are [REDACTED]' });
    const calls = (await readFile(join(dir, 'calls.jsonl'), 'utf8'))
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line));
    expect(calls).toEqual([
      { tool: 'add', args: { a: 4, b: 5 } },
      { tool: 'whoami', args: {} },
    ]);
  });

  it('is refused on AWS', async () => {
    const executor = createToolExecutor({ tools: { sum: tool(stdio('add')) }, env: { target: 'aws' } });
    const result = await executor.execute('sum', { a: 1, b: 1 });
    await executor.close();
    expect(result.ok ? undefined : result.error.code).toBe('MCP_STDIO_NOT_DEPLOYABLE');
  });

  it('names the program and what it wrote on stderr when it cannot be started as a server', async () => {
    const result = await call(
      {
        bad: tool({
          kind: 'mcp',
          command: ['node', '-e', 'console.error("no such server"); process.exit(3)'],
          tool: 'x',
        }),
      },
      'bad',
      {},
    );
    expect(result.ok ? undefined : result.error.code).toBe('TOOL_FAILED');
    expect(result.ok ? undefined : result.error.message).toContain('"node"');
    expect(result.ok ? undefined : result.error.message).toContain('no such server');
  });
});
