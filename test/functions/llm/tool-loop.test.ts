import { describe, expect, it } from 'vitest';
import { createConversation } from '../../../engine/conversation/index.ts';
import type { Message } from '../../../engine/model/schema.ts';
import type { LlmProvider, LlmRequest } from '../../../functions/llm/provider.ts';
import { createScriptedProvider } from '../../../functions/llm/scripted.ts';
import { TokenBudget } from '../../../functions/llm/token-budget.ts';
import { type ExecuteTool, runToolLoop, withUniqueCallIds } from '../../../functions/llm/tool-loop.ts';

const tools = {
  add: { description: 'adds a and b', parameters: { type: 'object' } },
  fail: { description: 'always fails' },
};
const prompt: Message[] = [{ role: 'user', content: 'compute' }];

const execute: ExecuteTool = async (name, args) => {
  if (name === 'add') return { ok: true, content: { sum: Number(args.a) + Number(args.b) } };
  throw new Error('disk on fire');
};

function scripted(...responses: unknown[]) {
  return createScriptedProvider({ provider: 'scripted', byNode: { agent: responses } });
}

describe('runToolLoop', () => {
  it('runs requested tools in order, sends results back, and returns everything to append', async () => {
    const provider = scripted(
      {
        content: 'adding',
        toolCalls: [
          { name: 'add', arguments: { a: 1, b: 2 } },
          { name: 'add', arguments: { a: 3, b: 4 } },
        ],
      },
      'sums are 3 and 7',
    );
    const seen: Message[][] = [];
    const spy: LlmProvider = {
      complete: (request: LlmRequest) => {
        seen.push([...request.messages]);
        return provider.complete(request);
      },
    };
    const result = await runToolLoop({
      provider: spy,
      nodeId: 'agent',
      messages: prompt,
      tools,
      executeTool: execute,
    });

    const assistant: Message = {
      role: 'assistant',
      content: 'adding',
      toolCalls: [
        { id: 'scripted_0_0', name: 'add', arguments: { a: 1, b: 2 } },
        { id: 'scripted_0_1', name: 'add', arguments: { a: 3, b: 4 } },
      ],
    };
    expect(result.appended).toEqual([
      assistant,
      { role: 'tool', content: '{"sum":3}', toolCallId: 'scripted_0_0', name: 'add' },
      { role: 'tool', content: '{"sum":7}', toolCallId: 'scripted_0_1', name: 'add' },
      { role: 'assistant', content: 'sums are 3 and 7' },
    ]);
    expect(result.finalText).toBe('sums are 3 and 7');
    expect(result.toolCallCount).toBe(2);
    expect(result.modelCallCount).toBe(2);
    expect(result.calls).toEqual({ total: 2, byNode: { agent: 2 } });
    expect(seen[1]).toEqual([...prompt, ...result.appended.slice(0, 3)]);
    // The scripted provider reports no usage: it is estimated from what was sent and received.
    expect(result.usage.promptTokens).toBeGreaterThan(0);
    expect(result.usage.completionTokens).toBeGreaterThan(0);
  });

  it('turns every tool failure into a result the model reads', async () => {
    const provider = scripted(
      {
        toolCalls: [
          { name: 'fail', arguments: {} },
          { name: 'nope', arguments: {} },
          { name: 'add', arguments: '{broken' },
          { name: 'add', arguments: { a: 'x' } },
        ],
      },
      'sorry',
    );
    const executeTool: ExecuteTool = async (name, args) =>
      name === 'add'
        ? { ok: false, content: `bad arguments: ${JSON.stringify(args)}` }
        : execute(name, args, { callId: '' });
    const result = await runToolLoop({ provider, nodeId: 'agent', messages: prompt, tools, executeTool });
    expect(result.appended.filter((m) => m.role === 'tool').map((m) => m.content)).toEqual([
      'Error: disk on fire',
      'Error: there is no tool named "nope"; the tools are: add, fail',
      'Error: the arguments must be a JSON object, got: {broken',
      'Error: bad arguments: {"a":"x"}',
    ]);
    expect(result.finalText).toBe('sorry');
  });

  it('fails with TOOL_CALL_LIMIT_EXCEEDED, running none of the reply that would go over', async () => {
    const provider = scripted(
      { toolCalls: [{ name: 'add', arguments: { a: 1, b: 1 } }] },
      {
        toolCalls: [
          { name: 'add', arguments: { a: 2, b: 2 } },
          { name: 'add', arguments: { a: 3, b: 3 } },
        ],
      },
      'never reached',
    );
    const ran: unknown[] = [];
    const executeTool: ExecuteTool = async (name, args, context) => {
      ran.push(args);
      return execute(name, args, context);
    };
    const failure = runToolLoop({
      provider,
      nodeId: 'agent',
      messages: prompt,
      tools,
      executeTool,
      maxToolCalls: 2,
    });
    await expect(failure).rejects.toMatchObject({ code: 'TOOL_CALL_LIMIT_EXCEEDED', nodeId: 'agent' });
    // The node keeps none of the turn, so the error says which tools did run.
    await expect(failure).rejects.toThrow(
      /over maxToolCallsPerRequest \(2\) \(after 1 tool call\(s\) of this request ran: add; what they did stands/,
    );
    expect(ran).toEqual([{ a: 1, b: 1 }]);
  });

  it('stops at the token limit before running the tools of the reply that crossed it (onTokenLimit fail)', async () => {
    const provider: LlmProvider = {
      complete: async () => ({
        message: {
          role: 'assistant',
          content: '',
          toolCalls: [{ id: 'c', name: 'add', arguments: { a: 1, b: 1 } }],
        },
        usage: { promptTokens: 80, completionTokens: 30 },
      }),
    };
    const budget = new TokenBudget(createConversation({ threadId: 't', logId: 'l' }), {
      tokenLimit: 100,
      nodeId: 'agent',
    });
    let ran = 0;
    await expect(
      runToolLoop({
        provider,
        nodeId: 'agent',
        messages: prompt,
        tools,
        executeTool: async () => {
          ran++;
          return { ok: true, content: 'x' };
        },
        onUsage: budget.record,
      }),
    ).rejects.toMatchObject({ code: 'TOKEN_LIMIT_EXCEEDED' });
    expect(ran).toBe(0);
    expect(budget.events).toEqual([
      { type: 'TOKEN_LIMIT_WARNING', totalTokens: 110, limit: 100 },
      { type: 'TOKEN_LIMIT_EXCEEDED', totalTokens: 110, limit: 100 },
    ]);
    expect(budget.state.tokenUsage).toMatchObject({ totalTokens: 110, limit: 100 });
  });

  it('keeps going past the limit with onTokenLimit continue, recording each exceeded call', async () => {
    const provider = scripted({ toolCalls: [{ name: 'add', arguments: { a: 1, b: 1 } }] }, 'done');
    const budget = new TokenBudget(createConversation({ threadId: 't', logId: 'l' }), {
      tokenLimit: 1,
      onTokenLimit: 'continue',
      nodeId: 'agent',
    });
    const result = await runToolLoop({
      provider,
      nodeId: 'agent',
      messages: prompt,
      tools,
      executeTool: execute,
      onUsage: budget.record,
    });
    expect(result.finalText).toBe('done');
    expect(budget.events.map((e) => e.type)).toEqual([
      'TOKEN_LIMIT_WARNING',
      'TOKEN_LIMIT_EXCEEDED',
      'TOKEN_LIMIT_EXCEEDED',
    ]);
    expect(budget.state.tokenUsage.totalTokens).toBe(
      result.usage.promptTokens + result.usage.completionTokens,
    );
  });

  it('offers no tools when none are given, and an abort inside a tool ends the loop', async () => {
    let offered: unknown = 'unset';
    const plain = await runToolLoop({
      provider: {
        complete: async (request) => {
          offered = request.tools;
          return { message: { role: 'assistant', content: 'hi' } };
        },
      },
      nodeId: 'agent',
      messages: prompt,
      executeTool: execute,
    });
    expect(offered).toBeUndefined();
    expect(plain.appended).toEqual([{ role: 'assistant', content: 'hi' }]);

    const controller = new AbortController();
    const run = runToolLoop({
      provider: scripted({ toolCalls: [{ name: 'add', arguments: {} }] }, 'never'),
      nodeId: 'agent',
      messages: prompt,
      tools,
      signal: controller.signal,
      executeTool: async () => {
        controller.abort(new Error('run ended'));
        throw new Error('interrupted');
      },
    });
    await expect(run).rejects.toThrow('run ended');
  });
});

describe('withUniqueCallIds', () => {
  it('replaces empty and repeated ids only', () => {
    const message: Message = {
      role: 'assistant',
      content: '',
      toolCalls: [
        { id: 'a', name: 't', arguments: {} },
        { id: 'a', name: 't', arguments: {} },
        { id: '', name: 't', arguments: {} },
      ],
    };
    expect(withUniqueCallIds(message, 'n_0').toolCalls?.map((c) => c.id)).toEqual(['a', 'n_0_1', 'n_0_2']);
  });
});

describe('runToolLoop: streamed replies', () => {
  it('numbers each model call of the request and marks where each reply begins', async () => {
    const provider = createScriptedProvider({
      provider: 'scripted',
      byNode: {
        agent: [
          { content: 'Adding now.', toolCalls: [{ name: 'add', arguments: { a: 1, b: 2 } }] },
          'It is 3.',
        ],
      },
      streamChunkMs: 0,
    });
    const pieces: unknown[] = [];
    const result = await runToolLoop({
      provider,
      nodeId: 'agent',
      messages: prompt,
      tools,
      executeTool: execute,
      onReplyText: (piece) => pieces.push(piece),
    });
    expect(result.finalText).toBe('It is 3.');
    expect(pieces).toEqual([
      { reply: 0, restart: true, text: 'Adding ' },
      { reply: 0, restart: false, text: 'now.' },
      { reply: 1, restart: true, text: 'It ' },
      { reply: 1, restart: false, text: 'is ' },
      { reply: 1, restart: false, text: '3.' },
    ]);
  });

  it("passes a provider's restart on as an empty piece that begins the reply again", async () => {
    const provider: LlmProvider = {
      complete: async (request) => {
        request.stream?.text('Hal');
        request.stream?.restart();
        request.stream?.text('Whole');
        return { message: { role: 'assistant', content: 'Whole' } };
      },
    };
    const pieces: unknown[] = [];
    await runToolLoop({
      provider,
      nodeId: 'agent',
      messages: prompt,
      executeTool: execute,
      onReplyText: (p) => pieces.push(p),
    });
    expect(pieces).toEqual([
      { reply: 0, restart: true, text: 'Hal' },
      { reply: 0, restart: true, text: '' },
      { reply: 0, restart: false, text: 'Whole' },
    ]);
  });
});
