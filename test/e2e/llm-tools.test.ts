/**
 * LLM with tools → TOOL → CODE, end to end on the embedded runtime (compiled ASL, dynalite, s3rver):
 * with the scripted provider, and with the `openai` provider against a local chat-completions server.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Message } from '../../engine/conversation/types.ts';
import type { Profile, Workflow } from '../../engine/model/schema.ts';
import { textReply, toolCallReply } from '../functions/llm/servers/openai-replies.ts';
import { type ScriptedServer, startScriptedServer } from '../functions/llm/servers/scripted-server.ts';
import { type E2e, ROOT, startE2e, valid } from './helpers.ts';

let e2e: E2e;
let crm: ScriptedServer;
let model: ScriptedServer;
beforeAll(async () => {
  [e2e, crm, model] = await Promise.all([
    startE2e('llm-tools'),
    startScriptedServer(),
    startScriptedServer(),
  ]);
});
afterAll(async () => {
  await Promise.all([e2e.close(), crm.close(), model.close()]);
});
beforeEach(() => {
  crm.requests.length = 0;
  model.requests.length = 0;
});

/** start → agent (LLM with a `code` and an `http` tool) → fetch (TOOL) → score (CODE) → end. */
function orderWorkflow(profile: Profile): Workflow {
  return valid({
    id: 'orders',
    version: 1,
    variables: [
      { name: 'reply', type: 'string' },
      { name: 'order', type: 'object' },
      { name: 'score', type: 'object' },
    ],
    profiles: { default: profile },
    tools: {
      double: {
        description: 'Doubles a number',
        parameters: { type: 'object', properties: { n: { type: 'number' } }, required: ['n'] },
        handler: { kind: 'code', code: 'return { doubled: input.n * 2 }' },
      },
      order: {
        description: 'Fetches an order by id',
        parameters: { type: 'object', properties: { id: { type: 'string' } }, required: ['id'] },
        handler: {
          kind: 'http',
          url: `${crm.url}/orders/{{args.id}}`,
          method: 'GET',
          // The CRM stand-in listens on loopback.
          allowPrivateNetwork: true,
        },
      },
    },
    nodes: [
      { id: 'start', type: 'START' },
      {
        id: 'agent',
        type: 'LLM',
        config: {
          prompt: 'Order {{input.orderId}}: how many points?',
          tools: ['double', 'order'],
          maxToolCallsPerRequest: 4,
          outputVariable: 'reply',
        },
      },
      {
        id: 'fetch',
        type: 'TOOL',
        config: { toolName: 'order', arguments: { id: '{{input.orderId}}' }, outputVariable: 'order' },
      },
      {
        id: 'score',
        type: 'CODE',
        config: {
          code: 'return { total: input.order.items * input.unit, reply: input.reply }',
          inputs: { unit: 'input.unit' },
          outputVariable: 'score',
        },
      },
      { id: 'end', type: 'END', config: { output: { score: '{{score}}', order: '{{nodes.fetch}}' } } },
    ],
    edges: [
      { from: 'start', to: 'agent' },
      { from: 'agent', to: 'fetch' },
      { from: 'fetch', to: 'score' },
      { from: 'score', to: 'end' },
    ],
  });
}

const ORDER = { id: 'A-17', items: 3 };

describe('LLM with tools → TOOL → CODE on the embedded runtime', () => {
  it('runs with the scripted provider: tool calls, tool results and the final reply are in the conversation', async () => {
    crm.reply({ body: ORDER }, { body: ORDER });
    const workflow = orderWorkflow({
      provider: 'scripted',
      byNode: {
        agent: [
          {
            content: 'Checking.',
            toolCalls: [
              { name: 'order', arguments: { id: 'A-17' } },
              { name: 'double', arguments: { n: 3 } },
            ],
          },
          'Order A-17 earns 6 points.',
        ],
      },
    });
    const outcome = await e2e.runtime.prepare(workflow).run({ orderId: 'A-17', unit: 2.5 });
    expect(outcome.error).toBeUndefined();
    expect(outcome.status).toBe('COMPLETED');
    expect(outcome.output).toEqual({
      score: { total: 7.5, reply: 'Order A-17 earns 6 points.' },
      order: ORDER,
    });
    const expected: Message[] = [
      { role: 'user', content: 'Order A-17: how many points?' },
      {
        role: 'assistant',
        content: 'Checking.',
        toolCalls: [
          { id: 'scripted_0_0', name: 'order', arguments: { id: 'A-17' } },
          { id: 'scripted_0_1', name: 'double', arguments: { n: 3 } },
        ],
      },
      { role: 'tool', content: JSON.stringify(ORDER), toolCallId: 'scripted_0_0', name: 'order' },
      { role: 'tool', content: '{"doubled":6}', toolCallId: 'scripted_0_1', name: 'double' },
      { role: 'assistant', content: 'Order A-17 earns 6 points.' },
    ];
    expect(await e2e.conversation(outcome.threadId)).toEqual(expected);
    // Once by the model's tool call, once by the TOOL node.
    expect(crm.requests.map((r) => r.path)).toEqual(['/orders/A-17?id=A-17', '/orders/A-17?id=A-17']);
    const thread = await e2e.thread(outcome.threadId);
    expect(thread.variables.thread).toMatchObject({
      reply: 'Order A-17 earns 6 points.',
      order: ORDER,
      score: { total: 7.5, reply: 'Order A-17 earns 6 points.' },
    });
    expect(thread.contextData.llmCalls).toEqual({ total: 2, byNode: { agent: 2 } });
  });

  it('runs with the openai provider against a local chat-completions server, tool call included', async () => {
    crm.reply({ body: ORDER });
    model.reply(
      toolCallReply([{ id: 'call_1', name: 'double', arguments: { n: 4 } }], { prompt: 40, completion: 8 }),
      textReply('Doubled: 8.', { prompt: 60, completion: 4 }),
    );
    const workflow = orderWorkflow({ provider: 'openai', model: 'test-model', baseUrl: `${model.url}/v1` });
    const outcome = await e2e.runtime.prepare(workflow).run({ orderId: 'A-17', unit: 1 });
    expect(outcome.error).toBeUndefined();
    expect(outcome.output).toEqual({ score: { total: 3, reply: 'Doubled: 8.' }, order: ORDER });

    expect(await e2e.conversation(outcome.threadId)).toEqual([
      { role: 'user', content: 'Order A-17: how many points?' },
      { role: 'assistant', content: '', toolCalls: [{ id: 'call_1', name: 'double', arguments: { n: 4 } }] },
      { role: 'tool', content: '{"doubled":8}', toolCallId: 'call_1', name: 'double' },
      { role: 'assistant', content: 'Doubled: 8.' },
    ]);

    // The model was offered both tools (never their handlers) and got the tool result back.
    expect(model.requests).toHaveLength(2);
    const [first, second] = model.requests.map(
      (r) => r.body as { tools: { function: { name: string } }[]; messages: unknown[] },
    );
    expect(model.requests[0]?.path).toBe('/v1/chat/completions');
    expect(first).toMatchObject({ model: 'test-model' });
    expect(first?.tools.map((t) => t.function.name)).toEqual(['double', 'order']);
    expect(JSON.stringify(first?.tools)).not.toContain(crm.url);
    expect(second?.messages.slice(-2)).toEqual([
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'double', arguments: '{"n":4}' } }],
      },
      { role: 'tool', tool_call_id: 'call_1', content: '{"doubled":8}' },
    ]);
    // The usage the server reported is what the thread counts.
    const thread = await e2e.thread(outcome.threadId);
    expect(thread.conversation.tokenUsage).toMatchObject({
      promptTokens: 100,
      completionTokens: 12,
      totalTokens: 112,
    });
  });

  it('fails the run with the TOOL node’s coded error when its tool fails', async () => {
    crm.reply({ body: ORDER }, { status: 500, body: { message: 'database down' } });
    const workflow = orderWorkflow({
      provider: 'scripted',
      byNode: { agent: [{ toolCalls: [{ name: 'order', arguments: { id: 'A-17' } }] }, 'ok'] },
    });
    const outcome = await e2e.runtime.prepare(workflow).run({ orderId: 'A-17', unit: 1 });
    expect(outcome.status).toBe('FAILED');
    expect(outcome.error).toMatchObject({ code: 'TOOL_HTTP_ERROR', nodeId: 'fetch' });
    expect(outcome.error?.message).toContain('node fetch: tool "order": HTTP 500');
  });

  it('fails the run with a coded CODE failure naming the node', async () => {
    crm.reply({ body: { id: 'A-17' } });
    const workflow = orderWorkflow({ provider: 'scripted', byNode: { agent: ['no tools needed'] } });
    const score = workflow.nodes.find((n) => n.id === 'score');
    if (score?.type !== 'CODE') throw new Error('the fixture changed');
    score.config.code = 'if (!input.order.items) throw new Error("order has no items"); return 1';
    const outcome = await e2e.runtime.prepare(workflow).run({ orderId: 'A-17', unit: 1 });
    expect(outcome.status).toBe('FAILED');
    expect(outcome.error).toMatchObject({ code: 'CODE_ERROR', nodeId: 'score' });
    expect(outcome.error?.message).toContain('node score: Error: order has no items');
  });

  /** start → agent (LLM offered `shout`, `explode` and `missing`, module tools) → end. */
  function moduleToolsAgent(calls: { name: string; arguments: Record<string, unknown> }[]): Workflow {
    return valid({
      id: 'module-agent',
      version: 1,
      profiles: {
        default: { provider: 'scripted', byNode: { agent: [{ toolCalls: calls }, 'Done.'] } },
      },
      tools: {
        shout: { description: 'shouts', handler: 'module:tools.mjs#shout' },
        explode: { description: 'throws', handler: 'module:tools.mjs#explode' },
        // The module has no such export: every call fails alike, whatever the model sends.
        missing: { description: 'broken', handler: 'module:tools.mjs#missing' },
      },
      nodes: [
        { id: 'start', type: 'START' },
        {
          id: 'agent',
          type: 'LLM',
          config: { prompt: 'Go.', tools: ['shout', 'explode', 'missing'], maxToolCallsPerRequest: 4 },
        },
        { id: 'end', type: 'END', config: { output: '{{nodes.agent}}' } },
      ],
      edges: [
        { from: 'start', to: 'agent' },
        { from: 'agent', to: 'end' },
      ],
    });
  }

  async function inToolsFolder<T>(work: () => Promise<T>): Promise<T> {
    const before = process.env.STEPTHREAD_WORKFLOW_DIR;
    process.env.STEPTHREAD_WORKFLOW_DIR = join(ROOT, 'test', 'functions', 'tools', 'fixtures');
    try {
      return await work();
    } finally {
      if (before === undefined) delete process.env.STEPTHREAD_WORKFLOW_DIR;
      else process.env.STEPTHREAD_WORKFLOW_DIR = before;
    }
  }

  it('fails the LLM node with INVALID_TOOL_DEFINITION when the model calls a tool whose definition is broken', async () => {
    const workflow = moduleToolsAgent([
      { name: 'shout', arguments: { text: 'hi' } },
      { name: 'missing', arguments: {} },
    ]);
    const outcome = await inToolsFolder(() => e2e.runtime.prepare(workflow).run({}));
    expect(outcome.status).toBe('FAILED');
    expect(outcome.error).toMatchObject({ code: 'INVALID_TOOL_DEFINITION', nodeId: 'agent' });
    expect(outcome.error?.message).toMatch(
      /^node agent: tool "missing": module .*tools\.mjs has no function export "missing" \(after 1 tool call\(s\) of this request ran: shout;/,
    );
    // The failed node keeps none of its turn, its prompt included.
    expect(await e2e.conversation(outcome.threadId)).toEqual([]);
  });

  it('shows the model a tool’s own failure, and the run completes', async () => {
    const workflow = moduleToolsAgent([{ name: 'explode', arguments: { what: 'this' } }]);
    const outcome = await inToolsFolder(() => e2e.runtime.prepare(workflow).run({}));
    expect(outcome.error).toBeUndefined();
    expect(outcome.status).toBe('COMPLETED');
    expect(outcome.output).toBe('Done.');
    const conversation = await e2e.conversation(outcome.threadId);
    expect(conversation[2]).toMatchObject({
      role: 'tool',
      name: 'explode',
      content: 'Error: TOOL_FAILED: tool "explode" failed: cannot handle this',
    });
  });

  it('runs a module tool from the workflow’s folder (STEPTHREAD_WORKFLOW_DIR) in a TOOL node', async () => {
    const workflow = valid({
      id: 'module-tool',
      version: 1,
      tools: { shout: { description: 'shouts', handler: 'module:tools.mjs#shout' } },
      nodes: [
        { id: 'start', type: 'START' },
        { id: 'loud', type: 'TOOL', config: { toolName: 'shout', arguments: { text: '{{input.word}}' } } },
        { id: 'end', type: 'END', config: { output: '{{nodes.loud}}' } },
      ],
      edges: [
        { from: 'start', to: 'loud' },
        { from: 'loud', to: 'end' },
      ],
    });
    const before = process.env.STEPTHREAD_WORKFLOW_DIR;
    process.env.STEPTHREAD_WORKFLOW_DIR = join(ROOT, 'test', 'functions', 'tools', 'fixtures');
    try {
      const outcome = await e2e.runtime.prepare(workflow).run({ word: 'hello' });
      expect(outcome.output).toBe('HELLO from shout');
    } finally {
      if (before === undefined) delete process.env.STEPTHREAD_WORKFLOW_DIR;
      else process.env.STEPTHREAD_WORKFLOW_DIR = before;
    }
  });
});
