/**
 * Approval of one tool call (`requiresApproval`) end to end on the embedded runtime: an LLM node
 * (the openai provider against a local chat-completions stand-in, so its requests are counted) stops
 * before a held call; the refund server (an http tool on loopback) is called only once approved.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Workflow } from '../../engine/model/schema.ts';
import type { InteractionReply } from '../../functions/nodes/user-interaction.ts';
import type { Interaction } from '../../functions/stores/interaction-store.ts';
import { textReply, toolCallReply } from '../functions/llm/servers/openai-replies.ts';
import { type ScriptedServer, startScriptedServer } from '../functions/llm/servers/scripted-server.ts';
import { type E2e, startE2e, valid } from './helpers.ts';

let e2e: E2e;
let shop: ScriptedServer;
let model: ScriptedServer;
beforeAll(async () => {
  [e2e, shop, model] = await Promise.all([
    startE2e('tool-approval'),
    startScriptedServer(),
    startScriptedServer(),
  ]);
});
afterAll(async () => {
  await Promise.all([e2e.close(), shop.close(), model.close()]);
});
beforeEach(() => {
  shop.requests.length = 0;
  model.requests.length = 0;
});

/** start → agent (LLM offered `refund`, held for approval by `rule`, and `lookup`, never held) → end. */
function refundWorkflow(id: string, rule: boolean | string = true): Workflow {
  return valid({
    id,
    version: 1,
    profiles: { default: { provider: 'openai', model: 'test-model', baseUrl: `${model.url}/v1` } },
    tools: {
      refund: {
        description: 'Refunds an order',
        parameters: {
          type: 'object',
          properties: { order: { type: 'string' }, amount: { type: 'number' } },
          required: ['order', 'amount'],
        },
        handler: { kind: 'http', url: `${shop.url}/refund`, method: 'POST', allowPrivateNetwork: true },
        requiresApproval: rule,
      },
      lookup: {
        description: 'Looks an order up',
        parameters: { type: 'object', properties: { order: { type: 'string' } } },
        handler: { kind: 'http', url: `${shop.url}/orders`, method: 'POST', allowPrivateNetwork: true },
      },
    },
    nodes: [
      { id: 'start', type: 'START' },
      {
        id: 'agent',
        type: 'LLM',
        config: { prompt: 'Handle {{input.order}}.', tools: ['refund', 'lookup'], maxToolCallsPerRequest: 4 },
      },
      { id: 'end', type: 'END', config: { output: '{{nodes.agent}}' } },
    ],
    edges: [
      { from: 'start', to: 'agent' },
      { from: 'agent', to: 'end' },
    ],
  });
}

const refundCall = (id: string, amount: number) => ({
  id,
  name: 'refund',
  arguments: { order: 'A-1', amount },
});

/** Answers each question with the next reply, recording the questions. */
function answering(...replies: InteractionReply[]) {
  const asked: Interaction[] = [];
  return {
    asked,
    answerInteraction: async (interaction: Interaction) => {
      asked.push(interaction);
      return replies.shift();
    },
  };
}

function toolMessages(messages: unknown[]): unknown[] {
  return messages.filter((m) => (m as { role?: string }).role === 'tool');
}

describe('a tool call that requires approval', () => {
  it('approved: asks with the tool, its arguments and the model’s message, runs the call once, and never asks the model that turn again', async () => {
    model.reply(
      toolCallReply([refundCall('call_1', 30)], undefined, 'I will refund A-1.'),
      textReply('Refunded.'),
    );
    shop.reply({ body: { refunded: 30 } });
    const source = answering({ kind: 'approve' });
    const outcome = await e2e.runtime.prepare(refundWorkflow('approve-refund')).run({ order: 'A-1' }, source);
    expect(outcome.error).toBeUndefined();
    expect(outcome.output).toBe('Refunded.');
    expect(source.asked).toHaveLength(1);
    expect(source.asked[0]).toMatchObject({
      nodeId: 'agent',
      interactionType: 'ask_for_approval',
      ask: 1,
      toolCall: {
        id: 'call_1',
        name: 'refund',
        arguments: { order: 'A-1', amount: 30 },
        message: 'I will refund A-1.',
      },
    });
    expect(source.asked[0]?.message).toContain('refund');
    expect(shop.requests.map((r) => [r.path, r.body])).toEqual([['/refund', { order: 'A-1', amount: 30 }]]);
    // The asking turn and the final one: the model was not asked again after the answer.
    expect(model.requests).toHaveLength(2);
    const conversation = await e2e.conversation(outcome.threadId);
    expect(conversation.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'assistant']);
    const closed = await e2e.runtime.stores.interactions!.getInteraction(outcome.threadId, 'agent');
    expect(closed).toMatchObject({ status: 'ANSWERED', resolution: { answer: { approved: true } } });
  });

  it('rejected with a reason: the tool is never called and the model reads the refusal', async () => {
    model.reply(toolCallReply([refundCall('call_1', 30)]), textReply('Understood, no refund.'));
    const source = answering({ kind: 'reject', reason: 'over the limit' });
    const outcome = await e2e.runtime.prepare(refundWorkflow('reject-refund')).run({ order: 'A-1' }, source);
    expect(outcome.error).toBeUndefined();
    expect(outcome.output).toBe('Understood, no refund.');
    expect(shop.requests).toHaveLength(0);
    expect(model.requests).toHaveLength(2);
    const sent = (model.requests[1]?.body as { messages: unknown[] } | undefined)?.messages ?? [];
    const [refusal] = toolMessages(sent) as { content: string }[];
    expect(refusal?.content).toContain('did not approve');
    expect(refusal?.content).toContain('over the limit');
  });

  it('two held calls in one turn are asked one after the other; calls not held run without asking', async () => {
    model.reply(
      toolCallReply([
        refundCall('call_1', 10),
        { id: 'call_2', name: 'lookup', arguments: { order: 'A-1' } },
        refundCall('call_3', 20),
      ]),
      textReply('Done.'),
    );
    shop.reply({ body: { refunded: 10 } }, { body: { found: true } });
    const order: string[] = [];
    const source = answering({ kind: 'approve' }, { kind: 'reject' });
    const outcome = await e2e.runtime.prepare(refundWorkflow('two-refunds')).run(
      { order: 'A-1' },
      {
        answerInteraction: async (interaction) => {
          order.push(`asked ${interaction.toolCall?.id} after ${shop.requests.length} tool request(s)`);
          return source.answerInteraction(interaction);
        },
      },
    );
    expect(outcome.error).toBeUndefined();
    expect(order).toEqual(['asked call_1 after 0 tool request(s)', 'asked call_3 after 2 tool request(s)']);
    expect(source.asked.map((i) => i.ask)).toEqual([1, 2]);
    expect(shop.requests.map((r) => r.path)).toEqual(['/refund', '/orders']);
    expect(model.requests).toHaveLength(2);
    const results = toolMessages(await e2e.conversation(outcome.threadId)) as { content: string }[];
    expect(results).toHaveLength(3);
    expect(results[2]?.content).toContain('did not approve');
  });

  it('an expression over args holds only the calls it is true for', async () => {
    model.reply(toolCallReply([refundCall('call_1', 50), refundCall('call_2', 500)]), textReply('Done.'));
    shop.reply({ body: { refunded: 50 } }, { body: { refunded: 500 } });
    const source = answering({ kind: 'approve' });
    const outcome = await e2e.runtime
      .prepare(refundWorkflow('refund-over-100', 'args.amount > 100'))
      .run({ order: 'A-1' }, source);
    expect(outcome.error).toBeUndefined();
    expect(source.asked.map((i) => i.toolCall?.arguments)).toEqual([{ order: 'A-1', amount: 500 }]);
    expect(shop.requests).toHaveLength(2);
  });

  it('no answer fails the node with USER_INPUT_REQUIRED, and the tool never ran', async () => {
    model.reply(toolCallReply([refundCall('call_1', 30)]));
    const outcome = await e2e.runtime.prepare(refundWorkflow('unanswered-refund')).run({ order: 'A-1' });
    expect(outcome.status).toBe('FAILED');
    expect(outcome.error).toMatchObject({ code: 'USER_INPUT_REQUIRED', nodeId: 'agent' });
    expect(shop.requests).toHaveLength(0);
  });
});

describe('an approval in a fork branch', () => {
  it('waits on its own while the other branch goes on', async () => {
    const base = refundWorkflow('fork-refund');
    const workflow = valid({
      ...base,
      profiles: {
        default: {
          provider: 'scripted',
          byNode: {
            agent: [
              {
                content: 'Refunding.',
                toolCalls: [{ name: 'refund', arguments: { order: 'A-1', amount: 5 } }],
              },
              'Refunded.',
            ],
            other: ['Other branch done.'],
          },
        },
      },
      nodes: [
        { id: 'start', type: 'START' },
        {
          id: 'split',
          type: 'FORK',
          config: { forkPathIds: ['a', 'b'], forkStrategy: 'parallel', childNodeIds: ['agent', 'other'] },
        },
        { id: 'agent', type: 'LLM', config: { prompt: 'Refund A-1.', tools: ['refund'] } },
        { id: 'other', type: 'LLM', config: { prompt: 'Say done.' } },
        {
          id: 'join',
          type: 'JOIN',
          config: { forkPathIds: ['a', 'b'], joinStrategy: 'ALL_COMPLETED', timeout: 0 },
        },
        { id: 'end', type: 'END', config: { output: ['{{nodes.agent}}', '{{nodes.other}}'] } },
      ],
      edges: [
        { from: 'start', to: 'split' },
        { from: 'split', to: 'agent' },
        { from: 'split', to: 'other' },
        { from: 'agent', to: 'join' },
        { from: 'other', to: 'join' },
        { from: 'join', to: 'end' },
      ],
    });
    shop.reply({ body: { refunded: 5 } });
    let otherBranch: string | undefined;
    const outcome = await e2e.runtime.prepare(workflow).run(
      {},
      {
        answerInteraction: async (interaction) => {
          expect(interaction.threadId).not.toBe(interaction.rootThreadId);
          // The question holds only its own branch: the other one finishes while it waits.
          for (let poll = 0; poll < 200 && otherBranch !== 'COMPLETED'; poll++) {
            const threads = await e2e.runtime.stores.threads.listThreadsOfExecution(interaction.executionId);
            otherBranch = threads.find(({ thread }) => thread.metadata.forkPathId === 'split/b')?.thread
              .status;
            if (otherBranch !== 'COMPLETED') await new Promise((resolve) => setTimeout(resolve, 50));
          }
          return { kind: 'approve' };
        },
      },
    );
    expect(outcome.error).toBeUndefined();
    expect(outcome.output).toEqual(['Refunded.', 'Other branch done.']);
    expect(otherBranch).toBe('COMPLETED');
    expect(shop.requests).toHaveLength(1);
  });
});

describe('approvals in the items of a FORK over a list', () => {
  it('each item asks on its own thread, and each approved call runs once', async () => {
    const base = refundWorkflow('map-refunds');
    const workflow = valid({
      ...base,
      profiles: {
        default: {
          provider: 'scripted',
          byNode: {
            agent: [{ toolCalls: [{ name: 'refund', arguments: { order: 'A-1', amount: 5 } }] }, 'Refunded.'],
          },
        },
      },
      nodes: [
        { id: 'start', type: 'START' },
        {
          id: 'fan',
          type: 'FORK',
          config: {
            forkPathIds: ['each'],
            forkStrategy: 'parallel',
            childNodeIds: ['agent'],
            forEach: '{{input.orders}}',
            itemVariable: 'order',
          },
        },
        { id: 'agent', type: 'LLM', config: { prompt: 'Refund {{order}}.', tools: ['refund'] } },
        {
          id: 'merge',
          type: 'JOIN',
          config: { forkPathIds: ['each'], joinStrategy: 'ALL_COMPLETED', timeout: 0 },
        },
        { id: 'end', type: 'END', config: { output: '{{nodes.merge}}' } },
      ],
      edges: [
        { from: 'start', to: 'fan' },
        { from: 'agent', to: 'merge' },
        { from: 'merge', to: 'end' },
      ],
    });
    shop.reply({ body: { refunded: 5 } }, { body: { refunded: 5 } }, { body: { refunded: 5 } });
    const source = answering({ kind: 'approve' }, { kind: 'approve' }, { kind: 'approve' });
    const outcome = await e2e.runtime.prepare(workflow).run({ orders: ['A-1', 'B-2', 'C-3'] }, source);
    expect(outcome.error).toBeUndefined();
    expect(outcome.output).toEqual(['Refunded.', 'Refunded.', 'Refunded.']);
    expect(new Set(source.asked.map((i) => i.threadId)).size).toBe(3);
    expect(source.asked.every((i) => i.threadId !== i.rootThreadId && i.ask === 1)).toBe(true);
    expect(shop.requests).toHaveLength(3);
  });
});
