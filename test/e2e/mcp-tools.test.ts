/**
 * MCP tools end to end on the embedded runtime (compiled ASL, dynalite, s3rver): a TOOL node and an
 * LLM node call the tools of an MCP server built with the SDK (Streamable HTTP on 127.0.0.1), with
 * definitions taken from its tools/list, read once per run and recorded on the thread.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { McpToolHandler, Profile, Workflow } from '../../engine/model/schema.ts';
import { hydrateAll } from '../../functions/stores/value-store.ts';
import { textReply, toolCallReply } from '../functions/llm/servers/openai-replies.ts';
import { type ScriptedServer, startScriptedServer } from '../functions/llm/servers/scripted-server.ts';
import { type McpTestServer, startMcpServer } from '../support/mcp-server.ts';
import { type E2e, startE2e, valid } from './helpers.ts';

let e2e: E2e;
let server: McpTestServer;
let model: ScriptedServer;
beforeAll(async () => {
  [e2e, server, model] = await Promise.all([startE2e('mcp-tools'), startMcpServer(), startScriptedServer()]);
});
afterAll(async () => {
  await Promise.all([e2e.close(), server.close(), model.close()]);
});
beforeEach(() => {
  server.requests.length = 0;
  server.calls.length = 0;
  model.requests.length = 0;
});

const mcp = (extra: Partial<McpToolHandler>): McpToolHandler => ({
  kind: 'mcp',
  url: server.url,
  // The test server listens on loopback.
  allowPrivateNetwork: true,
  ...extra,
});

/** start → total (TOOL: sum) → agent (LLM: sum and the shop server's greet and refund) → end. */
function shopWorkflow(profile: Profile): Workflow {
  return valid({
    id: 'mcp-shop',
    version: 1,
    variables: [
      { name: 'total', type: 'object' },
      { name: 'reply', type: 'string' },
    ],
    profiles: { default: profile },
    tools: {
      // Description and parameters come from the server.
      sum: { handler: mcp({ tool: 'add' }) },
      shop: { handler: mcp({ tools: ['greet', 'refund'] }) },
    },
    nodes: [
      { id: 'start', type: 'START' },
      {
        id: 'total',
        type: 'TOOL',
        config: { toolName: 'sum', arguments: { a: 2, b: 3 }, outputVariable: 'total' },
      },
      {
        id: 'agent',
        type: 'LLM',
        config: { prompt: 'Serve Ada', tools: ['sum', 'shop'], outputVariable: 'reply' },
      },
      { id: 'end', type: 'END', config: { output: { total: '{{total}}', reply: '{{reply}}' } } },
    ],
    edges: [
      { from: 'start', to: 'total' },
      { from: 'total', to: 'agent' },
      { from: 'agent', to: 'end' },
    ],
  });
}

const listings = () => server.methods().filter((method) => method === 'tools/list').length;

describe('MCP tools on the embedded runtime', () => {
  it('a TOOL node and an LLM node (scripted) call the server’s tools; isError reaches the model', async () => {
    const workflow = shopWorkflow({
      provider: 'scripted',
      byNode: {
        agent: [
          {
            content: 'Working.',
            toolCalls: [
              { name: 'shop_greet', arguments: { name: 'Ada' } },
              { name: 'shop_refund', arguments: { order: 'A-17' } },
              { name: 'sum', arguments: { a: 1, b: 2 } },
            ],
          },
          'Greeted Ada; the refund failed.',
        ],
      },
    });
    const outcome = await e2e.runtime.prepare(workflow).run({});
    expect(outcome.error).toBeUndefined();
    expect(outcome.output).toEqual({ total: { sum: 5 }, reply: 'Greeted Ada; the refund failed.' });
    expect(server.calls).toEqual([
      { tool: 'add', args: { a: 2, b: 3 } },
      { tool: 'greet', args: { name: 'Ada' } },
      { tool: 'refund', args: { order: 'A-17' } },
      { tool: 'add', args: { a: 1, b: 2 } },
    ]);
    const conversation = await e2e.conversation(outcome.threadId);
    expect(conversation.filter((m) => m.role === 'tool')).toEqual([
      { role: 'tool', content: 'Hello, Ada!', toolCallId: 'scripted_0_0', name: 'shop_greet' },
      {
        role: 'tool',
        content: 'Error: TOOL_FAILED: tool "shop_refund" reported an error: order A-17 is locked',
        toolCallId: 'scripted_0_1',
        name: 'shop_refund',
      },
      { role: 'tool', content: '3', toolCallId: 'scripted_0_2', name: 'sum' },
    ]);
    // Each entry's server was listed once in the run: `sum` by the TOOL node, `shop` by the agent.
    expect(listings()).toBe(2);
    // Recorded on the thread, each list a value slot: by reference once over 256 bytes.
    const stored = await e2e.thread(outcome.threadId);
    expect((stored.contextData.mcpTools as Record<string, unknown>).shop).toMatchObject({
      '$stepthread:ref': expect.any(String),
    });
    const {
      data: [thread],
    } = await hydrateAll(e2e.runtime.stores.values, [stored]);
    const recorded = thread?.contextData.mcpTools as Record<string, Array<{ name: string }>>;
    expect(Object.keys(recorded).sort()).toEqual(['shop', 'sum']);
    expect(recorded.sum?.map((t) => t.name)).toEqual(['add']);
    expect(recorded.shop?.map((t) => t.name)).toEqual(['greet', 'refund']);
  });

  it('offers the model the definitions the server listed (openai provider)', async () => {
    model.reply(
      toolCallReply([{ id: 'call_1', name: 'shop_greet', arguments: { name: 'Bo' } }]),
      textReply('Hi Bo.'),
    );
    const workflow = shopWorkflow({ provider: 'openai', model: 'test-model', baseUrl: `${model.url}/v1` });
    const outcome = await e2e.runtime.prepare(workflow).run({});
    expect(outcome.error).toBeUndefined();
    const [first] = model.requests.map(
      (r) => r.body as { tools: { function: { name: string; description: string; parameters: unknown } }[] },
    );
    expect(first?.tools.map((t) => t.function)).toEqual([
      {
        name: 'sum',
        description: 'Adds two numbers',
        parameters: expect.objectContaining({ properties: { a: { type: 'number' }, b: { type: 'number' } } }),
      },
      {
        name: 'shop_greet',
        description: 'Greets someone by name',
        parameters: expect.objectContaining({ properties: { name: { type: 'string' } } }),
      },
      { name: 'shop_refund', description: 'Refunds an order', parameters: expect.any(Object) },
    ]);
    // Never the handler: the server's address stays with stepthread.
    expect(JSON.stringify(first?.tools)).not.toContain(server.url);
    expect(server.calls).toEqual([
      { tool: 'add', args: { a: 2, b: 3 } },
      { tool: 'greet', args: { name: 'Bo' } },
    ]);
  });

  it('hands the recorded definitions to fork branches: the server is listed once for the run', async () => {
    const workflow = valid({
      id: 'mcp-fork',
      version: 1,
      tools: { sum: { handler: mcp({ tool: 'add' }) } },
      nodes: [
        { id: 'start', type: 'START' },
        { id: 'first', type: 'TOOL', config: { toolName: 'sum', arguments: { a: 1, b: 1 } } },
        {
          id: 'split',
          type: 'FORK',
          config: { forkPathIds: ['left', 'right'], forkStrategy: 'parallel', childNodeIds: ['l', 'r'] },
        },
        { id: 'l', type: 'TOOL', config: { toolName: 'sum', arguments: { a: 2, b: 2 } } },
        { id: 'r', type: 'TOOL', config: { toolName: 'sum', arguments: { a: 3, b: 3 } } },
        {
          id: 'merge',
          type: 'JOIN',
          config: { forkPathIds: ['left', 'right'], joinStrategy: 'ALL_COMPLETED' },
        },
        { id: 'end', type: 'END', config: { output: { l: '{{nodes.l}}', r: '{{nodes.r}}' } } },
      ],
      edges: [
        { from: 'start', to: 'first' },
        { from: 'first', to: 'split' },
        { from: 'l', to: 'merge' },
        { from: 'r', to: 'merge' },
        { from: 'merge', to: 'end' },
      ],
    });
    const outcome = await e2e.runtime.prepare(workflow).run({});
    expect(outcome.error).toBeUndefined();
    expect(outcome.output).toEqual({ l: { sum: 4 }, r: { sum: 6 } });
    expect(server.calls).toHaveLength(3);
    expect(listings()).toBe(1);
  });

  it('fails a TOOL node on a private address without allowPrivateNetwork with TOOL_EGRESS_DENIED', async () => {
    const workflow = valid({
      id: 'mcp-private',
      version: 1,
      tools: { sum: { description: 'Adds', handler: { kind: 'mcp', url: server.url, tool: 'add' } } },
      nodes: [
        { id: 'start', type: 'START' },
        { id: 'total', type: 'TOOL', config: { toolName: 'sum', arguments: { a: 1, b: 1 } } },
        { id: 'end', type: 'END' },
      ],
      edges: [
        { from: 'start', to: 'total' },
        { from: 'total', to: 'end' },
      ],
    });
    const outcome = await e2e.runtime.prepare(workflow).run({});
    expect(outcome.status).toBe('FAILED');
    expect(outcome.error).toMatchObject({ code: 'TOOL_EGRESS_DENIED', nodeId: 'total' });
    expect(server.requests).toEqual([]);
  });
});
