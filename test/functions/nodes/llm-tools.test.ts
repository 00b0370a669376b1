/** LLM nodes with tools, on real stores: the tool-call loop, token limits, tool failures. */

import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Message } from '../../../engine/conversation/types.ts';
import type { Profile, ToolDefinition } from '../../../engine/model/schema.ts';
import type { Envelope } from '../../../engine/thread/types.ts';
import type { HandlerDeps } from '../../../functions/handlers/deps.ts';
import { dispatch } from '../../../functions/handlers/dispatch.ts';
import type { TaskNode } from '../../../functions/handlers/task.ts';
import { envSecrets } from '../../../functions/tools/secrets.ts';
import { fullThread } from '../fixtures.ts';
import { failureOf, type Harness, run, startEvent, startHarness } from '../handlers/harness.ts';
import { type ScriptedServer, startScriptedServer } from '../llm/servers/scripted-server.ts';

let h: Harness;
let server: ScriptedServer;
beforeAll(async () => {
  [h, server] = await Promise.all([startHarness('llm-tools'), startScriptedServer()]);
});
afterAll(async () => {
  await Promise.all([h.close(), server.close()]);
});
beforeEach(() => {
  server.requests.length = 0;
});

const SECRET = 'tok-9f3b2c';
function deps(): HandlerDeps {
  return h.deps({ tools: { env: { target: 'local' }, secrets: envSecrets({ CRM_TOKEN: SECRET }) } });
}

function toolset(): Record<string, ToolDefinition> {
  return {
    double: {
      description: 'doubles n',
      parameters: { type: 'object', properties: { n: { type: 'number' } }, required: ['n'] },
      handler: { kind: 'code', code: 'return { doubled: input.n * 2 }' },
    },
    lookup: {
      description: 'looks a customer up',
      parameters: { type: 'object', properties: { id: { type: 'string' } }, required: ['id'] },
      handler: {
        kind: 'http',
        url: `${server.url}/customers/{{args.id}}`,
        method: 'GET',
        headers: { authorization: 'Bearer {{secrets.CRM_TOKEN}}' },
        // The scripted server listens on loopback.
        allowPrivateNetwork: true,
      },
    },
  };
}

function agent(profile: Profile, config: Record<string, unknown> = {}): TaskNode {
  return {
    id: 'agent',
    type: 'LLM',
    config: {
      prompt: 'Help customer {{input.customer}}',
      profileId: 'default',
      tools: ['double', 'lookup'],
      ...config,
    },
    profile,
    tools: toolset(),
    variables: [{ name: 'answer', type: 'string' }],
  };
}

const twoToolsThenAnswer = (): Profile => ({
  provider: 'scripted',
  byNode: {
    agent: [
      {
        content: 'Let me check.',
        toolCalls: [
          { name: 'double', arguments: { n: 21 } },
          { name: 'lookup', arguments: { id: 'c 7' } },
        ],
      },
      'Ada has 42 points.',
    ],
  },
});

async function start(executionId: string): Promise<Envelope> {
  return (await dispatch(
    startEvent(executionId, { customer: 'c 7' }, [{ name: 'answer', type: 'string' }]),
    deps(),
  )) as Envelope;
}

async function stored(envelope: Envelope) {
  const { thread } = await fullThread(h.stores.threads, envelope.threadId);
  return { thread, messages: await h.readMessages(thread) };
}

describe('LLM node with tools', () => {
  it('runs the model’s tool calls and appends assistant(toolCalls) → tool results → final reply, exactly', async () => {
    server.reply({ body: { id: 'c 7', name: 'Ada', token: SECRET } });
    const env = await start('exec-llm-tools');
    const next = await run(deps(), agent(twoToolsThenAnswer(), { outputVariable: 'answer' }), env);
    expect(next.last).toEqual({ nodeId: 'agent', status: 'COMPLETED' });

    const { thread, messages } = await stored(next);
    const expected: Message[] = [
      { role: 'user', content: 'Help customer c 7' },
      {
        role: 'assistant',
        content: 'Let me check.',
        toolCalls: [
          { id: 'scripted_0_0', name: 'double', arguments: { n: 21 } },
          { id: 'scripted_0_1', name: 'lookup', arguments: { id: 'c 7' } },
        ],
      },
      { role: 'tool', content: '{"doubled":42}', toolCallId: 'scripted_0_0', name: 'double' },
      // The secret the server echoed back is redacted before the model (or the log) sees it.
      {
        role: 'tool',
        content: '{"id":"c 7","name":"Ada","token":"[REDACTED]"}',
        toolCallId: 'scripted_0_1',
        name: 'lookup',
      },
      { role: 'assistant', content: 'Ada has 42 points.' },
    ];
    expect(messages).toEqual(expected);

    // The http tool got the url-encoded argument and the secret header.
    expect(server.requests).toHaveLength(1);
    expect(server.requests[0]).toMatchObject({
      method: 'GET',
      path: '/customers/c%207?id=c+7',
      headers: { authorization: `Bearer ${SECRET}` },
    });

    expect(thread.nodeResults.agent).toMatchObject({ status: 'COMPLETED', output: 'Ada has 42 points.' });
    expect(thread.variables.thread.answer).toBe('Ada has 42 points.');
    expect(thread.contextData.llmCalls).toEqual({ total: 2, byNode: { agent: 2 } });
    expect(thread.conversation.tokenUsage.totalTokens).toBeGreaterThan(0);
    expect(thread.conversation.tokenUsage.promptTokens).toBeGreaterThan(
      thread.conversation.tokenUsage.completionTokens,
    );
    expect(JSON.stringify(thread)).not.toContain(SECRET);

    // A retry of the committed step replays it: nothing runs again.
    const again = await run(deps(), agent(twoToolsThenAnswer(), { outputVariable: 'answer' }), env);
    expect(again).toEqual(next);
    expect(server.requests).toHaveLength(1);
  });

  it('shows a failing tool to the model as an error tool message and carries on', async () => {
    server.reply({ status: 503, body: { message: 'CRM down' } });
    const profile: Profile = {
      provider: 'scripted',
      byNode: {
        agent: [
          { toolCalls: [{ id: 'call-1', name: 'lookup', arguments: { id: 'x' } }] },
          'The CRM is down.',
        ],
      },
    };
    const next = await run(deps(), agent(profile), await start('exec-llm-tool-fails'));
    const { thread, messages } = await stored(next);
    expect(messages.slice(1)).toEqual([
      {
        role: 'assistant',
        content: '',
        toolCalls: [{ id: 'call-1', name: 'lookup', arguments: { id: 'x' } }],
      },
      {
        role: 'tool',
        content:
          'Error: TOOL_HTTP_ERROR: tool "lookup": HTTP 503 Service Unavailable: {"message":"CRM down"}',
        toolCallId: 'call-1',
        name: 'lookup',
      },
      { role: 'assistant', content: 'The CRM is down.' },
    ]);
    expect(thread.nodeResults.agent?.output).toBe('The CRM is down.');
  });

  it('reports arguments that break the tool’s schema to the model, without calling the tool', async () => {
    const profile: Profile = {
      provider: 'scripted',
      byNode: { agent: [{ toolCalls: [{ id: 'c1', name: 'double', arguments: { n: 'many' } }] }, 'Sorry.'] },
    };
    const { messages } = await stored(await run(deps(), agent(profile), await start('exec-llm-bad-args')));
    expect(messages[2]).toEqual({
      role: 'tool',
      content: 'Error: TOOL_ARGUMENTS_INVALID: tool "double": invalid arguments: arguments/n must be number',
      toolCallId: 'c1',
      name: 'double',
    });
  });

  it('fails the node with TOOL_CALL_LIMIT_EXCEEDED past maxToolCallsPerRequest, running none of the extra calls', async () => {
    const env = await start('exec-llm-limit');
    const node = agent(twoToolsThenAnswer(), { maxToolCallsPerRequest: 1 });
    const error = await failureOf(run(deps(), node, env));
    expect(error.name).toBe('stepthread.NodeFailed');
    expect(JSON.parse(error.message)).toMatchObject({ code: 'TOOL_CALL_LIMIT_EXCEEDED', nodeId: 'agent' });
    expect(server.requests).toHaveLength(0);
    const { thread } = await stored(env);
    expect(thread.conversation.log.length).toBe(0);
  });

  it('fails over the token limit: TOKEN_LIMIT_EXCEEDED event, no tool runs, nothing of the request kept', async () => {
    const env = await start('exec-llm-tokens-fail');
    const node = agent({ ...twoToolsThenAnswer(), tokenLimit: 5 } as Profile);
    const error = await failureOf(run(deps(), node, env));
    expect(JSON.parse(error.message)).toMatchObject({ code: 'TOKEN_LIMIT_EXCEEDED', nodeId: 'agent' });
    expect(server.requests).toHaveLength(0);
    const { thread } = await stored(env);
    expect(thread.nodeResults.agent?.status).toBe('FAILED');
    expect(thread.conversation.log.length).toBe(0);
    expect(thread.contextData.llmCalls).toBeUndefined();
    const types = thread.events?.map((e) => e.type) ?? [];
    expect(types.slice(-4)).toEqual([
      'NODE_STARTED',
      'TOKEN_LIMIT_WARNING',
      'TOKEN_LIMIT_EXCEEDED',
      'NODE_FAILED',
    ]);
    expect(thread.events?.find((e) => e.type === 'TOKEN_LIMIT_EXCEEDED')).toMatchObject({
      nodeId: 'agent',
      limit: 5,
    });
  });

  it('continues over the token limit with onTokenLimit `continue`, recording the event and the usage', async () => {
    server.reply({ body: { name: 'Ada' } });
    const env = await start('exec-llm-tokens-continue');
    const node = agent({ ...twoToolsThenAnswer(), tokenLimit: 5 } as Profile, { onTokenLimit: 'continue' });
    const next = await run(deps(), node, env);
    const { thread, messages } = await stored(next);
    expect(messages).toHaveLength(5);
    expect(thread.nodeResults.agent?.output).toBe('Ada has 42 points.');
    // One per model call made over the limit: both calls of the request.
    const exceeded = thread.events?.filter((e) => e.type === 'TOKEN_LIMIT_EXCEEDED') ?? [];
    expect(exceeded).toHaveLength(2);
    expect(thread.conversation.tokenUsage.limit).toBe(5);
    expect(thread.conversation.tokenUsage.totalTokens).toBeGreaterThan(5);
  });

  it('fails with a coded error naming the node for a tool it was not given, and for a bad config', async () => {
    const env = await start('exec-llm-bad');
    const missing = await failureOf(
      run(deps(), { ...agent(twoToolsThenAnswer()), tools: { double: toolset().double! } }, env),
    );
    expect(JSON.parse(missing.message)).toMatchObject({ code: 'UNKNOWN_TOOL', nodeId: 'agent' });
    expect(JSON.parse(missing.message).message).toContain('agent');

    const bad = await failureOf(
      run(deps(), agent(twoToolsThenAnswer(), { maxToolCallsPerRequest: -1 }), {
        ...env,
        step: env.step + 1,
      }),
    );
    expect(JSON.parse(bad.message)).toMatchObject({ code: 'INVALID_NODE_CONFIG', nodeId: 'agent' });
  });
});
