/** USER_INTERACTION end to end on the embedded runtime: waiting, answering, rejecting, failing, forks. */
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compileWorkflow } from '../../engine/asl/compile.ts';
import { createAwsClients } from '../../functions/aws/clients.ts';
import { aroundCommands } from '../../functions/aws/meter.ts';
import { memoryNodeTables } from '../../functions/handlers/node-tables.ts';
import { createLocalRuntime } from '../../functions/local/runtime.ts';
import type { InteractionReply } from '../../functions/nodes/user-interaction.ts';
import type { Interaction } from '../../functions/stores/interaction-store.ts';
import { itemKeys, TTL_ATTRIBUTE } from '../../functions/stores/table.ts';
import { assistant, type E2e, plain, startE2e, user, valid } from './helpers.ts';

let e2e: E2e;
beforeAll(async () => {
  e2e = await startE2e('interaction');
});
afterAll(() => e2e.close());

function askWorkflow(id: string, config: Record<string, unknown>, output: unknown = '{{answer}}') {
  return valid({
    id,
    version: 1,
    variables: [{ name: 'answer', type: 'any', scope: 'thread' }],
    profiles: { default: { provider: 'scripted', responses: ['Draft reply.'] } },
    nodes: [
      { id: 'start', type: 'START' },
      { id: 'draft', type: 'LLM', config: { prompt: 'Draft a reply.' } },
      { id: 'ask', type: 'USER_INTERACTION', config: { outputVariable: 'answer', ...config } },
      { id: 'end', type: 'END', config: { output } },
    ],
    edges: [
      { from: 'start', to: 'draft' },
      { from: 'draft', to: 'ask' },
      { from: 'ask', to: 'end' },
    ],
  });
}

const approval = { userInteractionType: 'ask_for_approval', showMessage: 'Send "{{nodes.draft}}"?' };

describe('a single interaction', () => {
  it('waits for the answer, then records it as a user message and the output variable', async () => {
    const seen: Interaction[] = [];
    const outcome = await e2e.runtime.prepare(askWorkflow('approve-1', approval)).run(
      {},
      {
        answerInteraction: async (interaction) => {
          seen.push(interaction);
          return { kind: 'approve' };
        },
      },
    );
    expect(outcome.status).toBe('COMPLETED');
    expect(outcome.output).toBe(true);
    expect(seen).toHaveLength(1);
    expect(seen[0]).toMatchObject({
      nodeId: 'ask',
      interactionType: 'ask_for_approval',
      message: 'Send "Draft reply."?',
      status: 'PENDING',
      threadId: outcome.threadId,
    });
    expect(plain(await e2e.conversation(outcome.threadId))).toEqual([
      user('Draft a reply.'),
      assistant('Draft reply.'),
      user('Approved.'),
    ]);
    const thread = await e2e.thread(outcome.threadId);
    expect(thread.nodeResults.ask?.output).toEqual({ approved: true });
    const types = (thread.events ?? []).map((event) => event.type);
    expect(types).toContain('USER_INTERACTION_REQUESTED');
    expect(types).toContain('USER_INTERACTION_RESPONDED');
    const stored = await e2e.runtime.stores.interactions!.getInteraction(outcome.threadId, 'ask');
    expect(stored).toMatchObject({ status: 'ANSWERED', resolution: { outcome: 'ANSWERED' } });
    // The item expires (the table's TTL attribute) a week after the question's deadline.
    const clients = createAwsClients(e2e.services.target, {
      tableName: 'e2e-interaction',
      bucketName: 'e2e-interaction',
    });
    const { Item } = await clients.dynamo.send(
      new GetCommand({
        TableName: 'e2e-interaction',
        Key: itemKeys.pendingInteraction(outcome.threadId, 'ask'),
      }),
    );
    clients.dynamo.destroy();
    expect(Item?.[TTL_ATTRIBUTE]).toBe(Math.floor(Date.parse(seen[0]!.deadline!) / 1000) + 7 * 86_400);
  });

  it('takes input and selections, checked against the options', async () => {
    const input = await e2e.runtime
      .prepare(askWorkflow('input-1', { userInteractionType: 'ask_for_input', showMessage: 'Which ticket?' }))
      .run({}, { answerInteraction: async () => ({ kind: 'input', value: { ticket: 42 } }) });
    expect(input.output).toEqual({ ticket: 42 });
    expect(plain(await e2e.conversation(input.threadId)).at(-1)).toEqual(user('{"ticket":42}'));

    const selection = askWorkflow('select-1', {
      userInteractionType: 'ask_for_selection',
      showMessage: 'Priority?',
      options: ['low', 'high'],
    });
    const chosen = await e2e.runtime
      .prepare(selection)
      .run({}, { answerInteraction: async () => ({ kind: 'select', choice: 1 }) });
    expect(chosen.output).toBe('high');
    const bad = await e2e.runtime
      .prepare(selection)
      .run({}, { answerInteraction: async () => ({ kind: 'select', choice: 5 }) });
    expect(bad.status).toBe('FAILED');
    expect(bad.error?.message).toContain('5 is not one of the 2 options (0: low, 1: high)');
  });

  it('answers at once from a config userInput, and show_message never waits', async () => {
    const asked: Interaction[] = [];
    const answerInteraction = async (interaction: Interaction) => {
      asked.push(interaction);
      return undefined;
    };
    const given = await e2e.runtime
      .prepare(askWorkflow('given-1', { ...approval, userInput: false }))
      .run({}, { answerInteraction });
    expect(given.status).toBe('COMPLETED');
    expect(given.output).toBe(false);

    const shown = await e2e.runtime
      .prepare(
        askWorkflow(
          'shown-1',
          // Nothing to answer, so no outputVariable (validate refuses one).
          {
            userInteractionType: 'show_message',
            showMessage: 'Sent: {{nodes.draft}}',
            outputVariable: undefined,
          },
          'done',
        ),
      )
      .run({}, { answerInteraction });
    expect(shown.status).toBe('COMPLETED');
    expect(plain(await e2e.conversation(shown.threadId)).at(-1)).toEqual(assistant('Sent: Draft reply.'));
    expect(asked).toEqual([]);
  });

  it('without an answer stops the run with USER_INPUT_REQUIRED saying how to answer', async () => {
    const outcome = await e2e.runtime.prepare(askWorkflow('unanswered-1', approval)).run({});
    expect(outcome.status).toBe('FAILED');
    expect(outcome.execution.status).toBe('FAILED');
    expect(outcome.error?.code).toBe('USER_INPUT_REQUIRED');
    expect(outcome.error?.message).toContain('--answers');
    expect(outcome.error?.message).toContain('{"ask":true}');
    const thread = await e2e.thread(outcome.threadId);
    expect(thread.status).toBe('FAILED');
    expect(thread.errors.at(-1)?.code).toBe('USER_INPUT_REQUIRED');
    const stored = await e2e.runtime.stores.interactions!.getInteraction(outcome.threadId, 'ask');
    expect(stored.status).toBe('FAILED');
    expect(await e2e.runtime.stores.interactions!.listOpenOfThread(outcome.threadId)).toEqual([]);
    // The question was asked, though never answered: the thread's record says so, and when.
    const asked = (thread.events ?? []).filter((event) => 'nodeId' in event && event.nodeId === 'ask');
    expect(asked.map((event) => event.type)).toEqual([
      'NODE_STARTED',
      'USER_INTERACTION_REQUESTED',
      'NODE_FAILED',
    ]);
    expect(asked[1]?.at).toBe(stored.requestedAt);
  });

  it('fails the run with the operator reason on a fail reply', async () => {
    const outcome = await e2e.runtime
      .prepare(askWorkflow('failed-1', approval))
      .run({}, { answerInteraction: async () => ({ kind: 'fail', reason: 'customer withdrew the ticket' }) });
    expect(outcome.status).toBe('FAILED');
    expect(outcome.error).toMatchObject({
      code: 'USER_INTERACTION_FAILED',
      message: 'customer withdrew the ticket',
      nodeId: 'ask',
    });
    const thread = await e2e.thread(outcome.threadId);
    const types = (thread.events ?? [])
      .filter((event) => 'nodeId' in event && event.nodeId === 'ask')
      .map((event) => event.type);
    expect(types).toEqual(['NODE_STARTED', 'USER_INTERACTION_REQUESTED', 'NODE_FAILED']);
  });
});

describe('requests of an answered interaction', () => {
  it('answered at once by its source: its item is written when asked and when closed, and read once', async () => {
    // A runtime of its own, so only this run's requests are seen, by item.
    const names = { tableName: 'e2e-interaction', bucketName: 'e2e-interaction' };
    const clients = createAwsClients(e2e.services.target, names);
    const calls: string[] = [];
    aroundCommands(clients.dynamo, ({ commandName, input }, next) => {
      const { Key, Item } = input as { Key?: { sk?: unknown }; Item?: { sk?: unknown } };
      if (String(Key?.sk ?? Item?.sk).startsWith('INTERACTION#')) calls.push(commandName);
      return next();
    });
    const runtime = createLocalRuntime({ clients });
    const outcome = await runtime
      .prepare(askWorkflow('approve-counted', approval))
      .run({}, { answerInteraction: async () => ({ kind: 'approve' }) });
    expect(outcome.status).toBe('COMPLETED');
    // Recorded PENDING; read back by the waiting Task (is it still this run's?); closed by the answer
    // Task. No look for an answer offered by `stepthread respond`: the source answered first.
    expect(calls).toEqual(['PutItemCommand', 'GetItemCommand', 'UpdateItemCommand']);
  });
});

describe('a rejection', () => {
  it('is an answer: the variable is false and a ROUTE on it decides', async () => {
    const workflow = valid({
      id: 'reject-route',
      version: 1,
      variables: [{ name: 'approved', type: 'boolean', scope: 'thread' }],
      nodes: [
        { id: 'start', type: 'START' },
        {
          id: 'approve',
          type: 'USER_INTERACTION',
          config: {
            userInteractionType: 'ask_for_approval',
            showMessage: 'Ship it?',
            outputVariable: 'approved',
          },
        },
        {
          id: 'decide',
          type: 'ROUTE',
          config: { routes: [{ condition: 'approved', targetNodeId: 'ship' }], defaultTargetNodeId: 'hold' },
        },
        { id: 'ship', type: 'END', config: { output: 'shipped' } },
        { id: 'hold', type: 'END', config: { output: 'held: {{nodes.approve.reason}}' } },
      ],
      edges: [
        { from: 'start', to: 'approve' },
        { from: 'approve', to: 'decide' },
      ],
    });
    const prepared = e2e.runtime.prepare(workflow);
    const rejected = await prepared.run(
      {},
      { answerInteraction: async () => ({ kind: 'reject', reason: 'not on Friday' }) },
    );
    expect(rejected.status).toBe('COMPLETED');
    expect(rejected.output).toBe('held: not on Friday');
    expect(plain(await e2e.conversation(rejected.threadId))).toEqual([user('Rejected. not on Friday')]);
    const approved = await prepared.run({}, { answerInteraction: async () => ({ kind: 'approve' }) });
    expect(approved.output).toBe('shipped');
  });
});

describe('interactions in parallel fork branches', () => {
  const workflow = valid({
    id: 'fork-approvals',
    version: 1,
    nodes: [
      { id: 'start', type: 'START' },
      {
        id: 'split',
        type: 'FORK',
        config: { forkPathIds: ['a', 'b'], forkStrategy: 'parallel', childNodeIds: ['ask-a', 'ask-b'] },
      },
      {
        id: 'ask-a',
        type: 'USER_INTERACTION',
        config: { userInteractionType: 'ask_for_approval', showMessage: 'Approve A?' },
      },
      {
        id: 'ask-b',
        type: 'USER_INTERACTION',
        config: { userInteractionType: 'ask_for_input', showMessage: 'Comment on B?' },
      },
      {
        id: 'merge',
        type: 'JOIN',
        config: { forkPathIds: ['a', 'b'], joinStrategy: 'ALL_COMPLETED', timeout: 0 },
      },
      { id: 'end', type: 'END', config: { output: '{{nodes.merge}}' } },
    ],
    edges: [
      { from: 'start', to: 'split' },
      { from: 'ask-a', to: 'merge' },
      { from: 'ask-b', to: 'merge' },
      { from: 'merge', to: 'end' },
    ],
  });

  it('waits on both at once and completes when they are answered in the opposite order', async () => {
    const waiting = new Map<string, (reply: InteractionReply) => void>();
    let bothAsked!: () => void;
    const asked = new Promise<void>((resolve) => {
      bothAsked = resolve;
    });
    const order: string[] = [];
    const run = e2e.runtime.prepare(workflow).run(
      {},
      {
        answerInteraction: (interaction) =>
          new Promise((resolve) => {
            waiting.set(interaction.nodeId, (reply) => {
              order.push(interaction.nodeId);
              resolve(reply);
            });
            if (waiting.size === 2) bothAsked();
          }),
      },
    );
    await asked;
    const open = await e2e.runtime.stores.interactions!.listOpen();
    expect(
      open
        .filter((i) => i.workflowId === 'fork-approvals')
        .map((i) => i.nodeId)
        .sort(),
    ).toEqual(['ask-a', 'ask-b']);
    waiting.get('ask-b')!({ kind: 'input', value: 'looks fine' });
    // B's answer lands fully (its interaction closed) before A's, however long that takes.
    const bOpen = async () =>
      (await e2e.runtime.stores.interactions!.listOpen()).some(
        (i) => i.workflowId === 'fork-approvals' && i.nodeId === 'ask-b',
      );
    while (await bOpen()) await new Promise((resolve) => setTimeout(resolve, 10));
    waiting.get('ask-a')!({ kind: 'approve' });
    const outcome = await run;
    expect(order).toEqual(['ask-b', 'ask-a']);
    expect(outcome.status).toBe('COMPLETED');
    expect(outcome.output).toEqual({ a: { approved: true }, b: 'looks fine' });
    // The main path (a, the default) restored its conversation into the parent.
    expect(plain(await e2e.conversation(outcome.threadId))).toEqual([user('Approved.')]);
  });

  it('fails cleanly when one branch gets no answer while the other waits', async () => {
    const outcome = await e2e.runtime.prepare(workflow).run(
      {},
      {
        answerInteraction: (interaction) =>
          interaction.nodeId === 'ask-a'
            ? Promise.resolve(undefined)
            : new Promise<InteractionReply>(() => {}),
      },
    );
    expect(outcome.status).toBe('FAILED');
    expect(outcome.error?.code).toBe('JOIN_FAILED');
    const threads = await e2e.runtime.stores.threads.listThreadsOfExecution(outcome.executionId);
    const errors = threads.flatMap(({ thread }) => thread.errors.map((error) => error.code));
    expect(errors).toContain('USER_INPUT_REQUIRED');
    // Branch b's question is closed, not left pending, once the run has ended.
    const children = threads
      .filter(({ thread }) => thread.id !== outcome.threadId)
      .map(({ thread }) => thread.id);
    for (const id of children)
      expect(await e2e.runtime.stores.interactions!.listOpenOfThread(id)).toEqual([]);
  });
});

describe('the answer Task', () => {
  it('commits once: a second, different answer for the same step and a retry after a crash change nothing', async () => {
    const { dispatch } = await import('../../functions/handlers/dispatch.ts');
    // The Task names its node in the workflow's node table, which the same compile gives again.
    const nodeTables = memoryNodeTables();
    const { nodeTable } = compileWorkflow(askWorkflow('answer-once', approval));
    nodeTables.add(nodeTable.ref, nodeTable.json);
    const deps = {
      ...e2e.runtime.stores,
      nodeTables,
      env: { now: () => '2030-01-01T00:00:00.000Z', newId: () => 'x' },
    };
    let duplicate: unknown;
    let committed: unknown;
    const crashed: string[] = [];
    const outcome = await e2e.runtime.prepare(askWorkflow('answer-once', approval)).run(
      {},
      {
        noRetryWaits: true,
        answerInteraction: async () => ({ kind: 'approve', reason: 'fine' }),
        interceptTask: async (call, invoke) => {
          const result = await invoke();
          if (call.entry.action !== 'answer' || call.attempt !== 1) return result;
          committed = result;
          // A second delivery with another answer (what a single-use token rules out on AWS)
          // replays the committed step.
          const event = call.event as { envelope: Record<string, unknown> };
          const other = { reply: { kind: 'reject', reason: 'no' } };
          duplicate = await dispatch({ ...event, envelope: { ...event.envelope, answer: other } }, deps);
          // Then the Lambda dies after its writes landed; Step Functions retries it.
          crashed.push(call.entry.stateName);
          throw Object.assign(new Error('died after the handler returned'), {
            name: 'Lambda.ServiceException',
          });
        },
      },
    );
    expect(crashed).toEqual(['ask:answer']);
    expect(duplicate).toEqual(committed);
    expect(committed).not.toHaveProperty('answer');
    expect(outcome.status).toBe('COMPLETED');
    expect(outcome.output).toBe(true);
    const thread = await e2e.thread(outcome.threadId);
    expect(thread.executionHistory.filter((entry) => entry.nodeId === 'ask')).toHaveLength(1);
    expect(thread.nodeResults.ask?.output).toEqual({ approved: true, reason: 'fine' });
    expect(plain(await e2e.conversation(outcome.threadId)).at(-1)).toEqual(user('Approved. fine'));
    const stored = await e2e.runtime.stores.interactions!.getInteraction(outcome.threadId, 'ask');
    expect(stored).toMatchObject({
      status: 'ANSWERED',
      resolution: { outcome: 'ANSWERED', answer: { kind: 'approval', approved: true, reason: 'fine' } },
    });
    // The reply sits next to the envelope only between the wait and the answer Task.
    const carrying = outcome.events.filter((event) =>
      JSON.stringify(event.output ?? null).includes('"reply"'),
    );
    expect([...new Set(carrying.map((event) => event.stateName))]).toEqual(['ask']);
  });

  it('records the question as asked when it commits the answer (REQUESTED before RESPONDED)', async () => {
    const outcome = await e2e.runtime
      .prepare(askWorkflow('requested-at', approval))
      .run({}, { answerInteraction: async () => ({ kind: 'approve' }) });
    const thread = await e2e.thread(outcome.threadId);
    const stored = await e2e.runtime.stores.interactions!.getInteraction(outcome.threadId, 'ask');
    const events = (thread.events ?? []).filter((event) => event.type.startsWith('USER_INTERACTION_'));
    expect(events.map((event) => event.type)).toEqual([
      'USER_INTERACTION_REQUESTED',
      'USER_INTERACTION_RESPONDED',
    ]);
    expect(events[0]?.at).toBe(stored.requestedAt);
  });

  it('started when asked: NODE_STARTED, the BEFORE hooks and the result carry the time of the question (seed 003 §2.1)', async () => {
    const base = askWorkflow('started-when-asked', approval) as unknown as {
      nodes: Record<string, unknown>[];
    };
    const hooked = valid({
      ...base,
      nodes: base.nodes.map((node) =>
        node.id === 'ask'
          ? {
              ...node,
              hooks: [
                { hookType: 'BEFORE_EXECUTE', eventName: 'before-ask' },
                { hookType: 'AFTER_EXECUTE', eventName: 'after-ask' },
              ],
            }
          : node,
      ),
    });
    const outcome = await e2e.runtime.prepare(hooked).run(
      {},
      {
        // The answer comes a while after the question.
        answerInteraction: () => new Promise((done) => setTimeout(() => done({ kind: 'approve' }), 60)),
      },
    );
    expect(outcome.status).toBe('COMPLETED');
    const thread = await e2e.thread(outcome.threadId);
    const stored = await e2e.runtime.stores.interactions!.getInteraction(outcome.threadId, 'ask');
    const ofAsk = (thread.events ?? []).filter((event) => 'nodeId' in event && event.nodeId === 'ask');
    expect(ofAsk.map((event) => [event.type, (event as { eventName?: string }).eventName])).toEqual([
      ['NODE_STARTED', undefined],
      ['HOOK_TRIGGERED', 'before-ask'],
      ['USER_INTERACTION_REQUESTED', undefined],
      ['USER_INTERACTION_RESPONDED', undefined],
      ['VARIABLE_CHANGED', undefined],
      ['HOOK_TRIGGERED', 'after-ask'],
      ['NODE_COMPLETED', undefined],
    ]);
    expect(ofAsk.slice(0, 3).map((event) => event.at)).toEqual(Array(3).fill(stored.requestedAt));
    // In the order they happened: the answer's events after the question's.
    expect(ofAsk.map((event) => event.at)).toEqual(ofAsk.map((event) => event.at).sort());
    const result = thread.nodeResults.ask!;
    expect(result.startedAt).toBe(stored.requestedAt);
    expect(Date.parse(result.endedAt!) - Date.parse(result.startedAt!)).toBeGreaterThanOrEqual(50);
  });
});
