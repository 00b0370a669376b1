/**
 * Seeds 003 and 004 line by line, end to end on the embedded runtime: each CONTEXT_PROCESSOR
 * operation at its edges through the real handlers and stores, sequences in one workflow and across
 * a loop, what a later LLM call is sent, the validation rules and their codes, USER_INTERACTION
 * configs and answers that do not fit, and the events and hooks around each node in the seed's order.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { terminalAnswers } from '../../cli/answers.ts';
import { type DevServer, startDevServer } from '../../cli/dev/server.ts';
import type { Workflow } from '../../engine/model/schema.ts';
import { validateWorkflow } from '../../engine/validation/validate.ts';
import { createAwsClients } from '../../functions/aws/clients.ts';
import { MAX_ANSWER_ATTEMPTS } from '../../functions/local/runtime.ts';
import type { Interaction } from '../../functions/stores/interaction-store.ts';
import { textReply } from '../functions/llm/servers/openai-replies.ts';
import { type ScriptedServer, startScriptedServer } from '../functions/llm/servers/scripted-server.ts';
import { assistant, type E2e, plain, startE2e, system, user, valid } from './helpers.ts';

let e2e: E2e;
let model: ScriptedServer;
beforeAll(async () => {
  [e2e, model] = await Promise.all([startE2e('seed-audit-context'), startScriptedServer()]);
});
afterAll(async () => {
  await Promise.all([e2e.close(), model.close()]);
});

type NodeSpec = { id: string; type: string; config?: unknown; hooks?: unknown[] };
const cp = (id: string, config: Record<string, unknown>, hooks?: unknown[]): NodeSpec => ({
  id,
  type: 'CONTEXT_PROCESSOR',
  config,
  ...(hooks ? { hooks } : {}),
});

/** START → nodes… → END, with `extra` top-level fields (profiles, tools, variables). */
function linear(
  id: string,
  nodes: NodeSpec[],
  extra: Record<string, unknown> = {},
  output: unknown = 'done',
) {
  const all = [{ id: 'start', type: 'START' }, ...nodes, { id: 'end', type: 'END', config: { output } }];
  return {
    id,
    version: 1,
    profiles: { default: { provider: 'scripted', responses: ['ok'] } },
    ...extra,
    nodes: all,
    edges: all.slice(1).map((node, i) => ({ from: all[i]!.id, to: node.id })),
  };
}

/** A five-message conversation built by an insert at -1 (no model needed). */
const SEED = [system('S'), user('u0'), assistant('a0'), user('u1'), assistant('a1')];
const seed = cp('seed', { operation: 'insert', insert: { position: -1, messages: SEED } });

async function run(workflow: unknown) {
  const outcome = await e2e.runtime.prepare(valid(workflow)).run({});
  const thread = await e2e.thread(outcome.threadId);
  return { outcome, thread, conversation: plain(await e2e.conversation(outcome.threadId)) };
}

const contents = (messages: { content: string }[]) => messages.map((m) => m.content);

describe('truncate through the handlers (seed 004 §1)', () => {
  it.each([
    [{ keepFirst: 0 }, []],
    [{ keepFirst: 2 }, ['S', 'u0']],
    [{ keepLast: 0 }, []],
    [{ keepLast: 2 }, ['u1', 'a1']],
    [{ keepLast: 5 }, ['S', 'u0', 'a0', 'u1', 'a1']],
    [{ keepLast: 9 }, ['S', 'u0', 'a0', 'u1', 'a1']],
    [{ removeFirst: 1 }, ['u0', 'a0', 'u1', 'a1']],
    [{ removeLast: 9 }, []],
    [{ range: { start: 1, end: 3 } }, ['u0', 'a0']],
    [{ keepFirst: 4, keepLast: 2 }, ['a0', 'u1']],
    [{ keepLast: 4, removeFirst: 1, removeLast: 1 }, ['a0', 'u1']],
  ])('%j', async (truncate, expected) => {
    const { outcome, thread, conversation } = await run(
      linear('cp-truncate', [seed, cp('trim', { operation: 'truncate', truncate })]),
    );
    expect(outcome.status).toBe('COMPLETED');
    expect(contents(conversation)).toEqual(expected);
    expect(thread.nodeResults.trim?.output).toEqual({
      operation: 'truncate',
      messageCount: expected.length,
      visibleCount: expected.length,
    });
  });
});

describe('insert through the handlers (seed 004 §2)', () => {
  it.each([
    [0, ['N', 'S', 'u0', 'a0', 'u1', 'a1']],
    [2, ['S', 'u0', 'N', 'a0', 'u1', 'a1']],
    [5, ['S', 'u0', 'a0', 'u1', 'a1', 'N']],
    [-1, ['S', 'u0', 'a0', 'u1', 'a1', 'N']],
  ])('at %i, with each role', async (position, expected) => {
    for (const role of ['system', 'user', 'assistant', 'tool']) {
      const { conversation } = await run(
        linear('cp-insert', [
          seed,
          cp('add', { operation: 'insert', insert: { position, messages: [{ role, content: 'N' }] } }),
        ]),
      );
      expect(contents(conversation)).toEqual(expected);
      expect(conversation[expected.indexOf('N')]?.role).toBe(role);
    }
  });

  it('after a truncate, the position counts visible messages', async () => {
    const { conversation } = await run(
      linear('cp-insert-after-truncate', [
        seed,
        cp('trim', { operation: 'truncate', truncate: { keepLast: 2 } }),
        cp('add', { operation: 'insert', insert: { position: 1, messages: [system('mid')] } }),
        cp('trim-again', { operation: 'truncate', truncate: { keepLast: 2 } }),
      ]),
    );
    expect(contents(conversation)).toEqual(['mid', 'a1']);
  });

  it('past the visible messages fails the node with INVALID_CONTEXT_INDEX and keeps the conversation', async () => {
    const { outcome, thread, conversation } = await run(
      linear('cp-insert-past', [
        seed,
        cp('add', { operation: 'insert', insert: { position: 6, messages: [user('N')] } }),
      ]),
    );
    expect(outcome.status).toBe('FAILED');
    expect(outcome.error).toMatchObject({ code: 'INVALID_CONTEXT_INDEX', nodeId: 'add' });
    expect(thread.nodeResults.add?.status).toBe('FAILED');
    expect(conversation).toEqual(SEED);
  });
});

describe('replace through the handlers (seed 004 §3)', () => {
  it('replaces by visible index, after a truncate too', async () => {
    const { conversation } = await run(
      linear('cp-replace', [
        seed,
        cp('trim', { operation: 'truncate', truncate: { removeFirst: 1 } }),
        cp('edit', { operation: 'replace', replace: { index: 0, message: user('U0') } }),
        cp('edit-last', { operation: 'replace', replace: { index: 3, message: assistant('A1') } }),
      ]),
    );
    expect(conversation).toEqual([user('U0'), assistant('a0'), user('u1'), assistant('A1')]);
  });

  it('an index outside the visible messages fails the node with INVALID_CONTEXT_INDEX', async () => {
    const { outcome, conversation } = await run(
      linear('cp-replace-outside', [
        seed,
        cp('edit', { operation: 'replace', replace: { index: 5, message: user('x') } }),
      ]),
    );
    expect(outcome.error).toMatchObject({ code: 'INVALID_CONTEXT_INDEX', nodeId: 'edit' });
    expect(conversation).toEqual(SEED);
  });

  it('a replaced system message is gone for a later clear, as if edited in place', async () => {
    const { conversation } = await run(
      linear('cp-replace-clear', [
        seed,
        cp('demote', { operation: 'replace', replace: { index: 0, message: user('no longer a rule') } }),
        cp('wipe', { operation: 'clear', clear: { keepSystemMessage: true } }),
      ]),
    );
    expect(conversation).toEqual([]);
    const swapped = await run(
      linear('cp-replace-clear-2', [
        seed,
        cp('swap', { operation: 'replace', replace: { index: 0, message: system('S2') } }),
        cp('wipe', { operation: 'clear', clear: {} }),
      ]),
    );
    expect(swapped.conversation).toEqual([system('S2')]);
  });
});

describe('clear through the handlers (seed 004 §4)', () => {
  const twoSystems = cp('seed', {
    operation: 'insert',
    insert: { position: -1, messages: [system('S1'), user('q'), system('S2'), assistant('r')] },
  });

  it.each([
    ['keepSystemMessage defaults to true', {}, ['S1', 'S2']],
    ['keepSystemMessage true', { keepSystemMessage: true }, ['S1', 'S2']],
    ['keepSystemMessage false', { keepSystemMessage: false }, []],
  ])('%s', async (_title, clear, expected) => {
    const { thread, conversation } = await run(
      linear('cp-clear', [twoSystems, cp('wipe', { operation: 'clear', clear })]),
    );
    expect(contents(conversation)).toEqual(expected);
    expect(thread.nodeResults.wipe?.output).toMatchObject({
      operation: 'clear',
      messageCount: expected.length,
    });
  });

  it('keeps system messages an earlier truncate hid, and nothing when there is none', async () => {
    const hidden = await run(
      linear('cp-clear-hidden', [
        twoSystems,
        cp('trim', { operation: 'truncate', truncate: { keepLast: 1 } }),
        cp('wipe', { operation: 'clear', clear: { keepSystemMessage: true } }),
      ]),
    );
    expect(contents(hidden.conversation)).toEqual(['S1', 'S2']);
    const none = await run(
      linear('cp-clear-none', [
        cp('seed', { operation: 'insert', insert: { position: -1, messages: [user('q'), assistant('r')] } }),
        cp('wipe', { operation: 'clear', clear: { keepSystemMessage: true } }),
      ]),
    );
    expect(none.conversation).toEqual([]);
  });
});

describe('filter through the handlers (seed 004 §5)', () => {
  it.each([
    [{ roles: ['user', 'assistant'] }, ['u0', 'a0', 'u1', 'a1']],
    [{ roles: ['system'] }, ['S']],
    [{ contentContains: ['1'] }, ['u1', 'a1']],
    [{ contentExcludes: ['0'] }, ['S', 'u1', 'a1']],
    [{ roles: ['user'], contentExcludes: ['0'] }, ['u1']],
  ])('%j', async (filter, expected) => {
    const { conversation } = await run(
      linear('cp-filter', [seed, cp('keep', { operation: 'filter', filter })]),
    );
    expect(contents(conversation)).toEqual(expected);
  });
});

describe('sequences of operations', () => {
  it('in one workflow: each node reports the messages it left, and the log keeps everything', async () => {
    const { thread, conversation } = await run(
      linear('cp-sequence', [
        seed,
        cp('trim', { operation: 'truncate', truncate: { keepLast: 3 } }),
        cp('rules', { operation: 'insert', insert: { position: 0, messages: [system('R')] } }),
        cp('edit', { operation: 'replace', replace: { index: 1, message: assistant('A0') } }),
        cp('drop', { operation: 'filter', filter: { contentExcludes: ['u1'] } }),
      ]),
    );
    expect(conversation).toEqual([system('R'), assistant('A0'), assistant('a1')]);
    const counts = ['seed', 'trim', 'rules', 'edit', 'drop'].map(
      (id) => (thread.nodeResults[id]!.output as { messageCount: number }).messageCount,
    );
    expect(counts).toEqual([5, 3, 4, 4, 3]);
    // Truncate and filter started a batch each; insert and replace did not.
    expect(thread.conversation.index.currentBatch).toBe(2);
    expect(thread.conversation.log.length).toBe(7);
  });

  it('across a loop: a keepLast window after every model turn keeps the last two messages', async () => {
    const workflow = {
      id: 'cp-window',
      version: 1,
      profiles: { default: { provider: 'scripted', responses: ['r0', 'r1', 'r2', 'r3'] } },
      nodes: [
        { id: 'start', type: 'START' },
        { id: 'each', type: 'LOOP_START', config: { loopId: 'turns', dataSource: 4, maxIterations: 10 } },
        { id: 'ask', type: 'LLM', config: { prompt: 'q{{index}}' } },
        cp('window', { operation: 'truncate', truncate: { keepLast: 2 } }),
        { id: 'next', type: 'LOOP_END', config: { loopId: 'turns' } },
        { id: 'end', type: 'END', config: { output: '{{nodes.window.messageCount}}' } },
      ],
      edges: [
        { from: 'start', to: 'each' },
        { from: 'each', to: 'ask' },
        { from: 'ask', to: 'window' },
        { from: 'window', to: 'next' },
        { from: 'next', to: 'end' },
      ],
    };
    const { outcome, thread, conversation } = await run(workflow);
    expect(outcome.status).toBe('COMPLETED');
    expect(outcome.output).toBe(2);
    expect(conversation).toEqual([user('q3'), assistant('r3')]);
    expect(thread.conversation.log.length).toBe(8);
    expect(thread.conversation.index.currentBatch).toBe(4);
  });
});

describe('processors on fork paths (seed 000: each child has its own conversation)', () => {
  const forked = (
    mainPathId: string,
    bNode = cp('b-add', { operation: 'replace', replace: { index: 4, message: assistant('from b') } }),
    afterNode = cp('after', { operation: 'truncate', truncate: { keepLast: 2 } }),
  ) => ({
    id: `cp-fork-${mainPathId}`,
    version: 1,
    nodes: [
      { id: 'start', type: 'START' },
      seed,
      {
        id: 'split',
        type: 'FORK',
        config: { forkPathIds: ['a', 'b'], forkStrategy: 'parallel', childNodeIds: ['a-wipe', 'b-add'] },
      },
      cp('a-wipe', { operation: 'clear', clear: { keepSystemMessage: false } }),
      bNode,
      {
        id: 'merge',
        type: 'JOIN',
        config: { forkPathIds: ['a', 'b'], joinStrategy: 'ALL_COMPLETED', timeout: 0, mainPathId },
      },
      afterNode,
      { id: 'end', type: 'END', config: { output: '{{nodes.merge}}' } },
    ],
    edges: [
      { from: 'start', to: 'seed' },
      { from: 'seed', to: 'split' },
      { from: 'a-wipe', to: 'merge' },
      { from: 'b-add', to: 'merge' },
      { from: 'merge', to: 'after' },
      { from: 'after', to: 'end' },
    ],
  });

  it.each([
    ['b', [user('u1'), assistant('from b')]],
    ['a', []],
  ])(
    'mainPathId %s: the parent continues with that path’s processed conversation',
    async (mainPathId, expected) => {
      const { outcome, conversation } = await run(forked(mainPathId));
      expect(outcome.status).toBe('COMPLETED');
      expect(outcome.output).toEqual({
        a: { operation: 'clear', messageCount: 0, visibleCount: 0 },
        b: { operation: 'replace', messageCount: 5, visibleCount: 5 },
      });
      expect(conversation).toEqual(expected);
      const threads = (await e2e.runtime.stores.threads.listThreadsOfExecution(outcome.executionId)).map(
        (entry) => entry.thread,
      );
      const byPath = new Map(threads.map((thread) => [thread.contextData.authorForkPathId, thread]));
      expect(plain(await e2e.runtime.conversationOf(byPath.get('a')!))).toEqual([]);
      expect(contents(plain(await e2e.runtime.conversationOf(byPath.get('b')!)))).toEqual([
        'S',
        'u0',
        'a0',
        'u1',
        'from b',
      ]);
    },
  );

  it('a replace on the main path still counts for a clear after the join', async () => {
    const { conversation } = await run(
      forked(
        'b',
        cp('b-add', { operation: 'replace', replace: { index: 0, message: user('not a rule') } }),
        cp('after', { operation: 'clear', clear: { keepSystemMessage: true } }),
      ),
    );
    expect(conversation).toEqual([]);
  });
});

describe('what a later LLM call sees (seed 004, integration with LLM execution)', () => {
  const openai = () => ({ default: { provider: 'openai', model: 'test-model', baseUrl: `${model.url}/v1` } });

  it('only the visible messages, in their visible order, then its own prompt', async () => {
    model.requests.length = 0;
    model.reply(textReply('fine'));
    const { outcome, conversation } = await run(
      linear(
        'cp-llm-sees',
        [
          seed,
          cp('trim', { operation: 'truncate', truncate: { keepLast: 2 } }),
          cp('rules', { operation: 'insert', insert: { position: 0, messages: [system('Be brief')] } }),
          { id: 'ask', type: 'LLM', config: { prompt: 'next?' } },
        ],
        { profiles: openai() },
      ),
    );
    expect(outcome.status).toBe('COMPLETED');
    const sent = (model.requests[0]!.body as { messages: { role: string; content: string }[] }).messages;
    expect(sent.map(({ role, content }) => ({ role, content }))).toEqual([
      system('Be brief'),
      user('u1'),
      assistant('a1'),
      user('next?'),
    ]);
    expect(conversation).toEqual([
      system('Be brief'),
      user('u1'),
      assistant('a1'),
      user('next?'),
      assistant('fine'),
    ]);
  });

  const TOOLS = {
    lookup: {
      description: 'Looks a thing up',
      parameters: { type: 'object', properties: {} },
      handler: { kind: 'code', code: 'return 1' },
    },
    refund: {
      description: 'Refunds an order',
      parameters: { type: 'object', properties: {} },
      handler: { kind: 'code', code: 'return 2' },
    },
  };
  const TOOL_DESCRIPTION = 'Available tools:\n- lookup: Looks a thing up\n- refund: Refunds an order';

  it('after clear {keepSystemMessage: false}, the model still gets its tools and their description', async () => {
    model.requests.length = 0;
    model.reply(textReply('no tool needed'));
    const { outcome, conversation } = await run(
      linear(
        'cp-clear-tools',
        [
          seed,
          cp('wipe', { operation: 'clear', clear: { keepSystemMessage: false } }),
          { id: 'ask', type: 'LLM', config: { prompt: 'hello', tools: ['lookup'] } },
        ],
        { profiles: openai(), tools: TOOLS },
      ),
    );
    expect(outcome.status).toBe('COMPLETED');
    const body = model.requests[0]!.body as {
      messages: { role: string }[];
      tools?: { function: { name: string } }[];
    };
    expect(body.messages).toEqual([system(TOOL_DESCRIPTION), user('hello')]);
    expect(body.tools?.map((t) => t.function.name)).toEqual(['lookup']);
    expect(conversation).toEqual([system(TOOL_DESCRIPTION), user('hello'), assistant('no tool needed')]);
  });

  it('clear keeps the tool description once, however often it runs, where the seed appends it (after the system messages before it); without tools there is none', async () => {
    const twice = await run(
      linear(
        'cp-clear-tools-twice',
        [
          seed,
          cp('wipe', { operation: 'clear', clear: { keepSystemMessage: true } }),
          cp('note', { operation: 'insert', insert: { position: -1, messages: [system('N'), user('q')] } }),
          cp('wipe-again', { operation: 'clear', clear: {} }),
        ],
        { tools: TOOLS },
      ),
    );
    expect(twice.conversation).toEqual([system('S'), system(TOOL_DESCRIPTION), system('N')]);
    expect(twice.thread.conversation.log.length).toBe(8);
    const none = await run(
      linear('cp-clear-no-tools', [
        seed,
        cp('wipe', { operation: 'clear', clear: { keepSystemMessage: false } }),
      ]),
    );
    expect(none.conversation).toEqual([]);
  });
});

describe('validation (seed 003 §5)', () => {
  const codesOf = (config: unknown, type = 'CONTEXT_PROCESSOR') =>
    validateWorkflow(linear('v', [{ id: 'n', type, config }])).errors.map((e) => e.code);

  it.each([
    ['an unknown operation', { operation: 'compress' }, 'INVALID_CONTEXT_OPERATION'],
    ['no operation', {}, 'INVALID_CONTEXT_OPERATION'],
    ['truncate without its object', { operation: 'truncate' }, 'MISSING_OPERATION_CONFIG'],
    ['truncate with no option', { operation: 'truncate', truncate: {} }, 'MISSING_OPERATION_CONFIG'],
    ['a negative count', { operation: 'truncate', truncate: { keepLast: -1 } }, 'INVALID_NODE_CONFIG'],
    ['insert without its object', { operation: 'insert' }, 'MISSING_OPERATION_CONFIG'],
    ['insert without messages', { operation: 'insert', insert: { position: 0 } }, 'MISSING_OPERATION_CONFIG'],
    [
      'insert without position',
      { operation: 'insert', insert: { messages: [user('x')] } },
      'MISSING_OPERATION_CONFIG',
    ],
    [
      'insert of no message',
      { operation: 'insert', insert: { position: 0, messages: [] } },
      'MISSING_OPERATION_CONFIG',
    ],
    [
      'insert below -1',
      { operation: 'insert', insert: { position: -2, messages: [user('x')] } },
      'INVALID_NODE_CONFIG',
    ],
    [
      'a message with an unknown role',
      { operation: 'insert', insert: { position: 0, messages: [{ role: 'robot', content: 'x' }] } },
      'INVALID_MESSAGE',
    ],
    [
      'a message without content',
      { operation: 'insert', insert: { position: 0, messages: [{ role: 'user' }] } },
      'INVALID_MESSAGE',
    ],
    ['replace without its object', { operation: 'replace' }, 'MISSING_OPERATION_CONFIG'],
    ['replace without message', { operation: 'replace', replace: { index: 0 } }, 'MISSING_OPERATION_CONFIG'],
    [
      'replace without index',
      { operation: 'replace', replace: { message: user('x') } },
      'MISSING_OPERATION_CONFIG',
    ],
    ['clear without its object', { operation: 'clear' }, 'MISSING_OPERATION_CONFIG'],
    ['filter without its object', { operation: 'filter' }, 'MISSING_OPERATION_CONFIG'],
    ['filter with no condition', { operation: 'filter', filter: {} }, 'MISSING_OPERATION_CONFIG'],
    [
      'filter on an unknown role',
      { operation: 'filter', filter: { roles: ['robot'] } },
      'INVALID_NODE_CONFIG',
    ],
    [
      'a replacement message with an unknown role',
      { operation: 'replace', replace: { index: 0, message: { role: 'robot', content: 'x' } } },
      'INVALID_MESSAGE',
    ],
  ])('CONTEXT_PROCESSOR: %s', (_title, config, code) => {
    expect(codesOf(config)).toContain(code);
  });

  it.each([
    ['truncate', { keepLast: 0 }],
    ['insert', { position: -1, messages: [user('x')] }],
    ['replace', { index: 0, message: user('x') }],
    ['clear', {}],
    ['filter', { roles: [] as string[], contentExcludes: ['x'] }],
  ])('CONTEXT_PROCESSOR: a minimal %s is valid', (operation, config) => {
    expect(codesOf({ operation, [operation]: config })).toEqual([]);
  });

  it.each([
    ['an unknown type', { userInteractionType: 'ask_for_money' }, 'INVALID_USER_INTERACTION_TYPE'],
    ['no type', {}, 'INVALID_USER_INTERACTION_TYPE'],
    [
      'a selection without options',
      { userInteractionType: 'ask_for_selection' },
      'INVALID_SELECTION_OPTIONS',
    ],
    [
      'a selection with no option',
      { userInteractionType: 'ask_for_selection', options: [] },
      'INVALID_SELECTION_OPTIONS',
    ],
    [
      'a selection with an option twice',
      { userInteractionType: 'ask_for_selection', options: ['a', 'a'] },
      'INVALID_SELECTION_OPTIONS',
    ],
    [
      'a showMessage that is not a string',
      { userInteractionType: 'show_message', showMessage: 3 },
      'INVALID_NODE_CONFIG',
    ],
    [
      'a timeout over a year',
      { userInteractionType: 'ask_for_input', timeoutSeconds: 31_536_001 },
      'INVALID_INTERACTION_TIMEOUT',
    ],
    [
      'a timeout of 0',
      { userInteractionType: 'ask_for_input', timeoutSeconds: 0 },
      'INVALID_INTERACTION_TIMEOUT',
    ],
    [
      'a fractional timeout',
      { userInteractionType: 'ask_for_input', timeoutSeconds: 1.5 },
      'INVALID_INTERACTION_TIMEOUT',
    ],
  ])('USER_INTERACTION: %s', (_title, config, code) => {
    expect(codesOf(config, 'USER_INTERACTION')).toContain(code);
  });

  it.each([
    { userInteractionType: 'ask_for_approval' },
    { userInteractionType: 'ask_for_input' },
    { userInteractionType: 'ask_for_selection', options: ['a'] },
    { userInteractionType: 'show_message' },
    // userInput: any type (seed 003 §5.2).
    { userInteractionType: 'ask_for_input', showMessage: 'x', userInput: { any: ['thing'] } },
  ])('USER_INTERACTION: %j is valid', (config) => {
    expect(codesOf(config, 'USER_INTERACTION')).toEqual([]);
  });
});

describe('events and hooks around each node (seed 003 §2.1)', () => {
  const hooks = [
    { hookType: 'AFTER_EXECUTE', eventName: 'after', eventPayload: { status: '{{result.status}}' } },
    { hookType: 'BEFORE_EXECUTE', eventName: 'before-low', weight: 1 },
    { hookType: 'BEFORE_EXECUTE', eventName: 'before-high', weight: 5 },
    { hookType: 'BEFORE_EXECUTE', eventName: 'disabled', enabled: false },
    { hookType: 'AFTER_EXECUTE', eventName: 'only-on-failure', condition: "result.status == 'FAILED'" },
  ];
  type Ev = { type: string; nodeId?: string; eventName?: string; payload?: unknown };
  const around = (events: readonly unknown[] | undefined, nodeId: string) =>
    ((events ?? []) as Ev[])
      .filter((e) => e.nodeId === nodeId)
      .map((e) => (e.eventName ? `${e.type}:${e.eventName}` : e.type));

  it('CONTEXT_PROCESSOR: NODE_STARTED, BEFORE hooks by weight, the operation, AFTER hooks, NODE_COMPLETED', async () => {
    const { thread } = await run(
      linear('hooks-cp', [seed, cp('trim', { operation: 'truncate', truncate: { keepLast: 1 } }, hooks)]),
    );
    expect(around(thread.events, 'trim')).toEqual([
      'NODE_STARTED',
      'HOOK_TRIGGERED:before-high',
      'HOOK_TRIGGERED:before-low',
      'CONTEXT_PROCESSED',
      'HOOK_TRIGGERED:after',
      'NODE_COMPLETED',
    ]);
    const after = (thread.events as Ev[]).find((e) => e.eventName === 'after');
    expect(after?.payload).toEqual({ status: 'COMPLETED' });
  });

  it('every node, START and END included, in the same order', async () => {
    const workflow = linear(
      'hooks-all',
      [
        {
          id: 'v',
          type: 'VARIABLE',
          config: { variableName: 'x', variableType: 'number', expression: '1' },
          hooks,
        },
        { ...seed, hooks },
      ],
      { variables: [{ name: 'x', type: 'number', scope: 'thread' }] },
    );
    for (const node of workflow.nodes as NodeSpec[]) node.hooks ??= hooks;
    const { thread } = await run(workflow);
    const workflowHooks = (thread.events as Ev[]).filter((e) => e.type === 'HOOK_TRIGGERED');
    expect(workflowHooks.map((e) => `${e.nodeId}:${e.eventName}`)).toEqual([
      'start:before-high',
      'start:before-low',
      'start:after',
      'v:before-high',
      'v:before-low',
      'v:after',
      'seed:before-high',
      'seed:before-low',
      'seed:after',
      'end:before-high',
      'end:before-low',
      'end:after',
    ]);
    expect(around(thread.events, 'v')).toEqual([
      'NODE_STARTED',
      'HOOK_TRIGGERED:before-high',
      'HOOK_TRIGGERED:before-low',
      'VARIABLE_CHANGED',
      'HOOK_TRIGGERED:after',
      'NODE_COMPLETED',
    ]);
    for (const id of ['start', 'end']) {
      expect(around(thread.events, id)).toEqual([
        'NODE_STARTED',
        'HOOK_TRIGGERED:before-high',
        'HOOK_TRIGGERED:before-low',
        'HOOK_TRIGGERED:after',
        'NODE_COMPLETED',
      ]);
    }
  });

  it('the thread ends after its last node: NODE_COMPLETED of END, then THREAD_COMPLETED (as NODE_FAILED, then THREAD_FAILED)', async () => {
    const types = (events: readonly unknown[] | undefined) => ((events ?? []) as Ev[]).map((e) => e.type);
    const done = await run(linear('thread-ends-after-end', [seed], {}, 'done'));
    expect(done.outcome.status).toBe('COMPLETED');
    expect(types(done.thread.events).slice(-3)).toEqual([
      'NODE_STARTED',
      'NODE_COMPLETED',
      'THREAD_COMPLETED',
    ]);
    const failed = await run(
      linear('thread-fails-after-node', [
        seed,
        cp('edit', { operation: 'replace', replace: { index: 9, message: user('x') } }),
      ]),
    );
    expect(failed.outcome.status).toBe('FAILED');
    expect(types(failed.thread.events).slice(-3)).toEqual(['NODE_STARTED', 'NODE_FAILED', 'THREAD_FAILED']);
  });

  it('a failing operation: the AFTER hooks still run, then NODE_FAILED', async () => {
    const { outcome, thread } = await run(
      linear('hooks-cp-fail', [
        seed,
        cp('edit', { operation: 'replace', replace: { index: 9, message: user('x') } }, hooks),
      ]),
    );
    expect(outcome.status).toBe('FAILED');
    expect(around(thread.events, 'edit')).toEqual([
      'NODE_STARTED',
      'HOOK_TRIGGERED:before-high',
      'HOOK_TRIGGERED:before-low',
      'HOOK_TRIGGERED:after',
      'HOOK_TRIGGERED:only-on-failure',
      'NODE_FAILED',
    ]);
  });

  it('USER_INTERACTION, answered by a person: the question and answer events sit between the hooks', async () => {
    const workflow = linear('hooks-ui', [
      {
        id: 'ask',
        type: 'USER_INTERACTION',
        config: { userInteractionType: 'ask_for_approval', showMessage: 'Go?' },
        hooks,
      },
    ]);
    const outcome = await e2e.runtime
      .prepare(valid(workflow))
      .run({}, { answerInteraction: async () => ({ kind: 'approve' }) });
    expect(outcome.status).toBe('COMPLETED');
    const thread = await e2e.thread(outcome.threadId);
    expect(around(thread.events, 'ask')).toEqual([
      'NODE_STARTED',
      'HOOK_TRIGGERED:before-high',
      'HOOK_TRIGGERED:before-low',
      'USER_INTERACTION_REQUESTED',
      'USER_INTERACTION_RESPONDED',
      'HOOK_TRIGGERED:after',
      'NODE_COMPLETED',
    ]);
  });

  it('USER_INTERACTION nobody answers: the AFTER hooks see the failure, then NODE_FAILED', async () => {
    const workflow = linear('hooks-ui-unanswered', [
      {
        id: 'ask',
        type: 'USER_INTERACTION',
        config: { userInteractionType: 'ask_for_input' },
        hooks,
      },
    ]);
    const outcome = await e2e.runtime.prepare(valid(workflow)).run({});
    expect(outcome.error).toMatchObject({ code: 'USER_INPUT_REQUIRED', nodeId: 'ask' });
    const thread = await e2e.thread(outcome.threadId);
    expect(around(thread.events, 'ask')).toEqual([
      'NODE_STARTED',
      'HOOK_TRIGGERED:before-high',
      'HOOK_TRIGGERED:before-low',
      // The question was asked though never answered: its REQUESTED event stands in the seed's place.
      'USER_INTERACTION_REQUESTED',
      'HOOK_TRIGGERED:after',
      'HOOK_TRIGGERED:only-on-failure',
      'NODE_FAILED',
    ]);
  });

  it('show_message: shows its text as an assistant message and asks nobody', async () => {
    const asked: Interaction[] = [];
    const workflow = linear(
      'hooks-show',
      [
        seed,
        {
          id: 'tell',
          type: 'USER_INTERACTION',
          config: { userInteractionType: 'show_message', showMessage: 'Saved {{nodes.seed.messageCount}}' },
          hooks,
        },
      ],
      {},
      '{{nodes.tell}}',
    );
    const outcome = await e2e.runtime.prepare(valid(workflow)).run(
      {},
      {
        answerInteraction: async (interaction) => {
          asked.push(interaction);
          return undefined;
        },
      },
    );
    expect(outcome.status).toBe('COMPLETED');
    expect(outcome.output).toBe('Saved 5');
    expect(asked).toEqual([]);
    expect(plain(await e2e.conversation(outcome.threadId)).at(-1)).toEqual(assistant('Saved 5'));
    const thread = await e2e.thread(outcome.threadId);
    expect(around(thread.events, 'tell')).toEqual([
      'NODE_STARTED',
      'HOOK_TRIGGERED:before-high',
      'HOOK_TRIGGERED:before-low',
      'HOOK_TRIGGERED:after',
      'NODE_COMPLETED',
    ]);
  });
});

describe('USER_INTERACTION configs (seed 003 §1.2, §4.3)', () => {
  const ask = (id: string, config: Record<string, unknown>) =>
    valid(
      linear(
        id,
        [{ id: 'ask', type: 'USER_INTERACTION', config: { outputVariable: 'answer', ...config } }],
        { variables: [{ name: 'answer', type: 'any', scope: 'thread' }] },
        '{{answer}}',
      ),
    );

  it.each([
    ['ask_for_approval', {}, 'Please approve this action', { kind: 'approve' }, true],
    ['ask_for_input', {}, 'Please provide input', { kind: 'input', value: 7 }, 7],
    [
      'ask_for_selection',
      { options: ['a', 'b'] },
      'Please make a selection',
      { kind: 'select', choice: 'b' },
      'b',
    ],
  ] as const)(
    '%s without showMessage asks the seed default question',
    async (type, extra, question, reply, output) => {
      const asked: Interaction[] = [];
      const outcome = await e2e.runtime
        .prepare(ask(`default-${type}`, { userInteractionType: type, ...extra }))
        .run(
          {},
          {
            answerInteraction: async (interaction) => {
              asked.push(interaction);
              return reply;
            },
          },
        );
      expect(outcome.status).toBe('COMPLETED');
      expect(outcome.output).toEqual(output);
      expect(asked.map((i) => i.message)).toEqual([question]);
    },
  );

  it('a config userInput answers at once: a selection by option or by index', async () => {
    for (const userInput of ['b', 1]) {
      const outcome = await e2e.runtime
        .prepare(
          ask('given-selection', {
            userInteractionType: 'ask_for_selection',
            options: ['a', 'b'],
            userInput,
          }),
        )
        .run({});
      expect(outcome.status).toBe('COMPLETED');
      expect(outcome.output).toBe('b');
    }
  });

  it('a config userInput approves or rejects with the usual words, in any case', async () => {
    for (const [userInput, expected] of [
      [true, true],
      ['Approved', true],
      ['YES', true],
      ['y', true],
      [false, false],
      ['reject', false],
      ['No', false],
      [{ approved: false, reason: 'too much' }, false],
    ] as const) {
      const outcome = await e2e.runtime
        .prepare(ask('given-approval', { userInteractionType: 'ask_for_approval', userInput }))
        .run({});
      expect(outcome.output, JSON.stringify(userInput)).toBe(expected);
    }
  });

  it('a selection given as digits is an index unless an option reads that way', async () => {
    const byIndex = await e2e.runtime
      .prepare(
        ask('given-digits', {
          userInteractionType: 'ask_for_selection',
          options: ['a', 'b'],
          userInput: '1',
        }),
      )
      .run({});
    expect(byIndex.output).toBe('b');
    const byOption = await e2e.runtime
      .prepare(
        ask('given-digit-option', {
          userInteractionType: 'ask_for_selection',
          options: ['0', '1'],
          userInput: '1',
        }),
      )
      .run({});
    expect(byOption.output).toBe('1');
  });

  it('a config userInput template that does not fit its options fails the node with INVALID_INTERACTION_ANSWER', async () => {
    // A literal one that does not fit is refused by validate (seed-audit-003-004.test.ts).
    const outcome = await e2e.runtime
      .prepare(
        ask('given-bad', {
          userInteractionType: 'ask_for_selection',
          options: ['a'],
          userInput: '{{input.pick}}',
        }),
      )
      .run({ pick: 'z' });
    expect(outcome.status).toBe('FAILED');
    expect(outcome.error).toMatchObject({ code: 'INVALID_INTERACTION_ANSWER', nodeId: 'ask' });
  });

  it('through the runtime, a reply that does not fit is refused with its code and asked again', async () => {
    const selection = ask('refused-then-right', {
      userInteractionType: 'ask_for_selection',
      options: ['low', 'high'],
    });
    const replies = [
      { kind: 'select', choice: 5 },
      { kind: 'approve' },
      { kind: 'select', choice: 'high' },
    ] as const;
    const refusals: (string | undefined)[] = [];
    const outcome = await e2e.runtime.prepare(selection).run(
      {},
      {
        answerInteraction: async (_interaction, { refused }) => {
          refusals.push(refused?.code);
          return replies[refusals.length - 1];
        },
      },
    );
    expect(outcome.status).toBe('COMPLETED');
    expect(outcome.output).toBe('high');
    expect(refusals).toEqual([undefined, 'INVALID_INTERACTION_ANSWER', 'INVALID_INTERACTION_ANSWER']);
    expect(plain(await e2e.conversation(outcome.threadId))).toEqual([user('high')]);

    let asked = 0;
    const wrong = await e2e.runtime.prepare(selection).run(
      {},
      {
        answerInteraction: async () => {
          asked += 1;
          return { kind: 'select', choice: 'urgent' };
        },
      },
    );
    expect(asked).toBe(MAX_ANSWER_ATTEMPTS);
    expect(wrong.status).toBe('FAILED');
    expect(wrong.error).toMatchObject({ code: 'INVALID_INTERACTION_ANSWER', nodeId: 'ask' });
  });

  it('on the terminal, an answer that does not fit is asked again, and the right one is taken', async () => {
    const lines = ['7', 'urgent', '', '1'];
    const written: string[] = [];
    const source = terminalAnswers(
      async () => lines.shift() ?? '',
      (text) => written.push(text),
    );
    const interaction = {
      nodeId: 'choose',
      interactionType: 'ask_for_selection',
      options: ['low', 'high'],
      message: 'Priority?',
    } as unknown as Interaction;
    expect(await source(interaction, {})).toEqual({ kind: 'select', choice: 1 });
    expect(lines).toEqual([]);
    expect(written.filter((text) => text.includes('choose 0-1'))).toHaveLength(3);
    const approvalLines = ['maybe', 'y because'];
    const approval = terminalAnswers(
      async () => approvalLines.shift() ?? '',
      () => {},
    );
    expect(await approval({ ...interaction, interactionType: 'ask_for_approval' as const }, {})).toEqual({
      kind: 'approve',
      reason: 'because',
    });
  });

  it('show_message without showMessage completes, adds nothing and asks nobody', async () => {
    const outcome = await e2e.runtime
      .prepare(
        valid(
          linear('show-nothing', [
            seed,
            { id: 'tell', type: 'USER_INTERACTION', config: { userInteractionType: 'show_message' } },
          ]),
        ),
      )
      .run({}, { answerInteraction: async () => ({ kind: 'approve' }) });
    expect(outcome.status).toBe('COMPLETED');
    expect(plain(await e2e.conversation(outcome.threadId))).toEqual(SEED);
  });
});

describe('USER_INTERACTION answers that do not fit lose nothing (local console API)', () => {
  let folder: string;
  let server: DevServer;
  beforeAll(async () => {
    folder = mkdtempSync(join(tmpdir(), 'stepthread-seed-audit-'));
    const selection: Workflow = valid(
      linear(
        'pick',
        [
          {
            id: 'choose',
            type: 'USER_INTERACTION',
            config: {
              userInteractionType: 'ask_for_selection',
              showMessage: 'Priority?',
              options: ['low', 'high'],
              outputVariable: 'picked',
            },
          },
        ],
        { variables: [{ name: 'picked', type: 'any', scope: 'thread' }] },
        '{{picked}}',
      ),
    );
    writeFileSync(join(folder, 'pick.json'), JSON.stringify(selection));
    server = await startDevServer({
      clients: createAwsClients(e2e.services.target, {
        tableName: 'e2e-seed-audit-context',
        bucketName: 'e2e-seed-audit-context',
      }),
      workflowsDir: folder,
    });
  });
  afterAll(async () => {
    await server?.close();
    rmSync(folder, { recursive: true, force: true });
  });

  const call = async (method: string, path: string, body?: unknown) => {
    const response = await fetch(`${server.url}${path}`, {
      method,
      headers: { 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return { status: response.status, body: (await response.json()) as Record<string, unknown> };
  };
  type Page = {
    execution: { status: string };
    rootThreadId: string;
    pending: { interactionId: string; options?: string[] }[];
  };
  const page = async (id: string) => (await call('GET', `/api/executions/${id}`)).body as unknown as Page;
  async function until(id: string, done: (p: Page) => boolean): Promise<Page> {
    for (;;) {
      const current = await page(id);
      if (done(current)) return current;
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
  }

  it('a selection not among the options, or of the wrong kind, is refused with a code; the run still waits', async () => {
    const started = await call('POST', '/api/workflows/pick/runs', { input: {} });
    const executionId = started.body.executionId as string;
    const waiting = await until(executionId, (p) => p.pending.length > 0);
    const path = `/api/interactions/${encodeURIComponent(waiting.pending[0]!.interactionId)}/answer`;
    for (const wrong of [
      { select: 2 },
      { select: -1 },
      { select: 'urgent' },
      { approve: true },
      { input: 'high' },
    ]) {
      const refused = await call('POST', path, wrong);
      expect(refused.status, JSON.stringify(wrong)).toBe(400);
      expect(refused.body).toMatchObject({ error: { code: 'INVALID_INTERACTION_ANSWER' } });
    }
    const still = await page(executionId);
    expect(still.execution.status).toBe('RUNNING');
    expect(still.pending).toHaveLength(1);

    expect((await call('POST', path, { select: 1 })).status).toBe(202);
    const done = await until(executionId, (p) => p.execution.status !== 'RUNNING');
    expect(done.execution.status).toBe('COMPLETED');
    const thread = await e2e.thread(done.rootThreadId);
    expect(thread.output).toBe('high');
    expect(thread.nodeResults.choose?.output).toEqual({ index: 1, option: 'high' });
    expect(plain(await e2e.conversation(done.rootThreadId))).toEqual([user('high')]);
  });
});
