/**
 * Cancelling a run on the embedded runtime (functions/cancel/): a model call in flight is aborted —
 * the model's server sees its connection closed — whether the cancel comes from this runtime or from
 * another one over the same stores (as `stepthread cancel` beside `stepthread run`); the run ends
 * CANCELLED with its reason, nothing half-written, `resume` refuses it, and a copy of its thread
 * still runs. A FORK over 20 items, every branch waiting on a model, ends with every item CANCELLED.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { StepthreadError } from '../../engine/errors.ts';
import type { StepthreadEvent } from '../../engine/events.ts';
import type { Workflow } from '../../engine/model/schema.ts';
import { createAwsClients } from '../../functions/aws/clients.ts';
import type { EventPublisher } from '../../functions/events/publisher.ts';
import { createLocalRuntime, type TaskCall } from '../../functions/local/runtime.ts';
import { textReply } from '../functions/llm/servers/openai-replies.ts';
import { type ScriptedServer, startScriptedServer } from '../functions/llm/servers/scripted-server.ts';
import { startOtlpReceiver } from '../support/otlp-receiver.ts';
import { type E2e, startE2e, valid } from './helpers.ts';

let e2e: E2e;
let model: ScriptedServer;
beforeAll(async () => {
  [e2e, model] = await Promise.all([startE2e('cancel'), startScriptedServer()]);
});
afterAll(async () => {
  await Promise.all([e2e.close(), model.close()]);
});

/** Generous: a poll every 250 ms under a loaded machine; what is asserted is the state reached. */
const SOON = { timeout: 5000, interval: 20 };

function askWorkflow(id: string): Workflow {
  return valid({
    id,
    version: 1,
    profiles: { default: { provider: 'openai', model: 'test-model', baseUrl: `${model.url}/v1` } },
    nodes: [
      { id: 'start', type: 'START' },
      { id: 'topic', type: 'CODE', config: { code: "return 'caching'" } },
      { id: 'ask', type: 'LLM', config: { prompt: 'Write a long essay on {{nodes.topic}}.' } },
      { id: 'end', type: 'END', config: { output: { essay: '{{nodes.ask}}' } } },
    ],
    edges: [
      { from: 'start', to: 'topic' },
      { from: 'topic', to: 'ask' },
      { from: 'ask', to: 'end' },
    ],
  });
}

/** Starts a run whose model call hangs, and resolves once the model server holds its request. */
async function runWaitingOnModel(workflow: Workflow, executionId: string) {
  const before = model.requests.length;
  model.reply({ ...textReply('never sent'), delayMs: 60_000 });
  const running = e2e.runtime.prepare(workflow).run({}, { executionId });
  running.catch(() => {});
  await vi.waitFor(() => expect(model.requests.length).toBe(before + 1), SOON);
  // In an object: an async function returning the promise itself would wait for the run.
  return { running };
}

describe('cancel', () => {
  it('closes the model call in flight and ends the run CANCELLED, with nothing half-written', async () => {
    const executionId = 'cancel-in-flight';
    const workflow = askWorkflow('cancel-in-flight');
    const abandonedBefore = model.abandoned.length;
    const { running } = await runWaitingOnModel(workflow, executionId);

    const cancelled = await e2e.runtime.cancel(executionId, { reason: 'wrong prompt' });
    expect(cancelled).toMatchObject({
      executionId,
      status: 'CANCELLED',
      alreadyCancelled: false,
      alreadyEnded: false,
      threadsCancelled: 1,
      reason: 'wrong prompt',
    });
    const outcome = await running;
    expect(outcome.status).toBe('CANCELLED');
    expect(outcome.error).toEqual({ code: 'RUN_CANCELLED', message: 'the run was cancelled: wrong prompt' });
    await vi.waitFor(() => expect(model.abandoned.length).toBe(abandonedBefore + 1), SOON);

    const thread = await e2e.thread(outcome.threadId);
    expect(thread.status).toBe('CANCELLED');
    expect(thread.endTime).toBeDefined();
    // START and CODE committed; the LLM step was abandoned: no result, no record, no message.
    expect(thread.step).toBe(2);
    expect(thread.executionHistory.map((entry) => entry.nodeId)).toEqual(['start', 'topic']);
    expect(await e2e.runtime.stores.threads.readSteps(thread.id)).toHaveLength(2);
    expect(await e2e.conversation(thread.id)).toEqual([]);
    expect((thread.events ?? []).filter((event) => event.type === 'THREAD_CANCELLED')).toEqual([
      expect.objectContaining({ from: 'RUNNING', to: 'CANCELLED', reason: 'wrong prompt' }),
    ]);
    expect(await e2e.runtime.stores.executions.getExecution(executionId)).toMatchObject({
      status: 'CANCELLED',
      endTime: expect.any(String),
    });

    // Cancelling again changes nothing and keeps the first reason.
    expect(await e2e.runtime.cancel(thread.id, { reason: 'again' })).toMatchObject({
      status: 'CANCELLED',
      alreadyCancelled: true,
      threadsCancelled: 0,
      reason: 'wrong prompt',
    });

    // Resume refuses it, with its code.
    await expect(e2e.runtime.prepare(workflow).resume(executionId)).rejects.toMatchObject({
      code: 'RUN_CANCELLED',
    } satisfies Partial<StepthreadError>);

    // A copy from a step before (`copy --from topic`) runs it again, to its end.
    const copy = await e2e.runtime.copyThread(thread.id, { fromNodeId: 'topic' });
    expect(copy.status).toBe('CREATED');
    model.reply(textReply('A short essay.'));
    const again = await e2e.runtime.prepare(workflow, { startNodeId: 'topic' }).runThread(copy.id);
    expect(again.status).toBe('COMPLETED');
    expect(again.output).toEqual({ essay: 'A short essay.' });
  });

  it('copies a run cancelled at its first model call to stand at that call; a copy at START runs and ends FAILED, not RUNNING', async () => {
    const executionId = 'cancel-first-call';
    const workflow = valid({
      id: 'cancel-first-call',
      version: 1,
      profiles: { default: { provider: 'openai', model: 'test-model', baseUrl: `${model.url}/v1` } },
      nodes: [
        { id: 'start', type: 'START' },
        { id: 'ask', type: 'LLM', config: { prompt: 'Write a long essay.' } },
        { id: 'end', type: 'END', config: { output: '{{nodes.ask}}' } },
      ],
      edges: [
        { from: 'start', to: 'ask' },
        { from: 'ask', to: 'end' },
      ],
    });
    const { running } = await runWaitingOnModel(workflow, executionId);
    await e2e.runtime.cancel(executionId);
    const { threadId } = await running;

    // Given the workflow the run ran, the copy stands at the call the cancel stopped (START committed).
    const atCall = await e2e.runtime.copyThread(threadId, { workflow });
    expect(atCall.currentNodeId).toBe('ask');
    model.reply(textReply('A short essay.'));
    const again = await e2e.runtime.prepare(workflow, { startNodeId: 'ask' }).runThread(atCall.id);
    expect(again).toMatchObject({ status: 'COMPLETED', output: 'A short essay.' });

    // No workflow to find it from (this runtime records no runs): the copy stands at START, whose Task
    // fails (the thread exists). The run ends FAILED with that code, its execution too.
    const atStart = await e2e.runtime.copyThread(threadId);
    expect(atStart.currentNodeId).toBe('start');
    const failed = await e2e.runtime.prepare(workflow, { startNodeId: 'start' }).runThread(atStart.id);
    expect(failed.status).toBe('FAILED');
    expect(failed.error).toMatchObject({ code: 'CREATE_CONFLICT', nodeId: 'start' });
    const thread = await e2e.thread(atStart.id);
    expect(thread.status).toBe('FAILED');
    expect(thread.endTime).toBeDefined();
    expect(thread.errors).toEqual([expect.objectContaining({ code: 'CREATE_CONFLICT', nodeId: 'start' })]);
    expect(await e2e.runtime.stores.executions.getExecution(failed.executionId)).toMatchObject({
      status: 'FAILED',
      endTime: expect.any(String),
    });
  });

  it('reaches a run of another runtime over the same stores, through the cancel mark', async () => {
    const executionId = 'cancel-from-elsewhere';
    const abandonedBefore = model.abandoned.length;
    const { running } = await runWaitingOnModel(askWorkflow('cancel-from-elsewhere'), executionId);

    // Another runtime (another process): it shares only the stores with the run.
    const elsewhere = createLocalRuntime({
      clients: createAwsClients(e2e.services.target, e2e.services.names),
    });
    expect((await elsewhere.cancel(executionId)).status).toBe('CANCELLED');

    const outcome = await running;
    expect(outcome.status).toBe('CANCELLED');
    expect(outcome.error?.code).toBe('RUN_CANCELLED');
    await vi.waitFor(() => expect(model.abandoned.length).toBe(abandonedBefore + 1), SOON);
    expect((await e2e.thread(outcome.threadId)).step).toBe(2);
  });

  it('a run cancelled by another runtime between its steps stops at its next step, which leaves no trace', async () => {
    const workflow = valid({
      id: 'cancel-between-steps',
      version: 1,
      nodes: [
        { id: 'start', type: 'START' },
        { id: 'first', type: 'CODE', config: { code: 'return 1' } },
        { id: 'second', type: 'CODE', config: { code: 'return 2' } },
        { id: 'end', type: 'END' },
      ],
      edges: [
        { from: 'start', to: 'first' },
        { from: 'first', to: 'second' },
        { from: 'second', to: 'end' },
      ],
    });
    const elsewhere = createLocalRuntime({
      clients: createAwsClients(e2e.services.target, e2e.services.names),
    });
    const executionId = 'cancel-between-steps';
    // Nothing waits on a model here: the cancel lands between two steps, and only the records say it.
    const interceptTask = async (call: TaskCall, invoke: () => Promise<unknown>) => {
      if (call.entry.nodeId === 'second' && call.attempt === 1) {
        expect((await elsewhere.cancel(executionId, { reason: 'from elsewhere' })).status).toBe('CANCELLED');
      }
      return invoke();
    };
    const outcome = await e2e.runtime.prepare(workflow).run({}, { executionId, interceptTask });
    expect(outcome.status).toBe('CANCELLED');
    expect(outcome.error).toEqual({
      code: 'RUN_CANCELLED',
      message: 'the run was cancelled: from elsewhere',
    });
    const thread = await e2e.thread(outcome.threadId);
    expect(thread.executionHistory.map((entry) => entry.nodeId)).toEqual(['start', 'first']);
    expect(thread.errors).toEqual([]);
    expect((await e2e.runtime.stores.executions.getExecution(executionId)).status).toBe('CANCELLED');
  });

  it("publishes the cancel's THREAD_CANCELLED events where the runtime publishes its steps' events (a stack's bus)", async () => {
    const published: StepthreadEvent[] = [];
    const sink: EventPublisher = {
      publish: async (events) => {
        published.push(...events);
      },
    };
    const clients = createAwsClients(e2e.services.target, e2e.services.names);
    const running = createLocalRuntime({ clients, events: sink });
    const executionId = 'cancel-published';
    model.reply({ ...textReply('never sent'), delayMs: 60_000 });
    const before = model.requests.length;
    const run = running.prepare(askWorkflow('cancel-published')).run({}, { executionId });
    run.catch(() => {});
    await vi.waitFor(() => expect(model.requests.length).toBe(before + 1), SOON);
    // As `stepthread cancel --stack` does: another runtime over the stores, with the stack's bus.
    const elsewhere = createLocalRuntime({ clients, events: sink });
    expect((await elsewhere.cancel(executionId, { reason: 'published' })).status).toBe('CANCELLED');
    const outcome = await run;
    expect(outcome.status).toBe('CANCELLED');
    const thread = await e2e.thread(outcome.threadId);
    // Every event the thread records went to the sink, the cancel's among them (once, from the cancel).
    const recorded = (await e2e.runtime.stores.threads.readJournal(thread.id)).events;
    const key = (event: StepthreadEvent) => `${event.type} ${'nodeId' in event ? event.nodeId : ''}`;
    expect(recorded.map(key)).toEqual([
      'THREAD_CREATED ',
      'THREAD_STARTED ',
      'NODE_STARTED start',
      'NODE_COMPLETED start',
      'NODE_STARTED topic',
      'NODE_COMPLETED topic',
      'THREAD_CANCELLED ',
    ]);
    expect(published.map(key)).toEqual(recorded.map(key));
    expect(published.at(-1)).toMatchObject({
      type: 'THREAD_CANCELLED',
      threadId: thread.id,
      from: 'RUNNING',
      to: 'CANCELLED',
      reason: 'published',
    });
  });

  it('refuses a run that already ended, and changes nothing', async () => {
    model.reply(textReply('Done.'));
    const done = await e2e.runtime.prepare(askWorkflow('cancel-ended')).run({});
    expect(done.status).toBe('COMPLETED');
    expect(await e2e.runtime.cancel(done.executionId)).toMatchObject({
      status: 'COMPLETED',
      alreadyEnded: true,
      threadsCancelled: 0,
    });
    expect((await e2e.thread(done.threadId)).status).toBe('COMPLETED');
    await expect(e2e.runtime.cancel('no-such-run')).rejects.toMatchObject({ code: 'EXECUTION_NOT_FOUND' });
  });

  it('cancels a FORK over 20 items while every branch waits on its model: every item thread ends CANCELLED', async () => {
    const workflow = valid({
      id: 'cancel-fork',
      version: 1,
      profiles: { default: { provider: 'scripted', delayMs: 60_000, responses: ['never'] } },
      nodes: [
        { id: 'start', type: 'START' },
        {
          id: 'each',
          type: 'FORK',
          config: {
            forkPathIds: ['item'],
            forkStrategy: 'parallel',
            childNodeIds: ['work'],
            forEach: '{{input.items}}',
            itemVariable: 'item',
            maxConcurrency: 20,
          },
        },
        { id: 'work', type: 'LLM', config: { prompt: 'Work on {{item}}.' } },
        { id: 'merge', type: 'JOIN', config: { forkPathIds: ['item'], joinStrategy: 'ALL_COMPLETED' } },
        { id: 'end', type: 'END' },
      ],
      edges: [
        { from: 'start', to: 'each' },
        { from: 'work', to: 'merge' },
        { from: 'merge', to: 'end' },
      ],
    });
    const inFlight = new Set<string>();
    const interceptTask = async (call: TaskCall, invoke: () => Promise<unknown>) => {
      const threadId = (call.event as { envelope?: { threadId?: string } }).envelope?.threadId;
      if (call.entry.nodeId === 'work' && threadId) inFlight.add(threadId);
      return invoke();
    };
    const executionId = 'cancel-fork-20';
    const running = e2e.runtime
      .prepare(workflow)
      .run({ items: Array.from({ length: 20 }, (_, i) => i) }, { executionId, interceptTask });
    running.catch(() => {});
    await vi.waitFor(() => expect(inFlight.size).toBe(20), { timeout: 20_000, interval: 50 });

    const cancelled = await e2e.runtime.cancel(executionId, { reason: 'enough' });
    expect(cancelled.status).toBe('CANCELLED');
    const outcome = await running;
    expect(outcome.status).toBe('CANCELLED');

    const threads = await e2e.runtime.stores.threads.listThreadsOfExecution(executionId);
    const items = threads.filter(({ thread }) => thread.id !== outcome.threadId);
    expect(items).toHaveLength(20);
    expect(items.map(({ thread }) => thread.status)).toEqual(Array(20).fill('CANCELLED'));
    for (const { thread } of items) {
      // Each item stopped in its model call: nothing of it was committed after the item's first step.
      expect(thread.executionHistory.map((entry) => entry.nodeId)).not.toContain('work');
    }
    const root = await e2e.thread(outcome.threadId);
    expect(root.status).toBe('CANCELLED');
    expect(root.executionHistory.map((entry) => entry.nodeId)).toEqual(['start', 'each']);
  }, 60_000);
  it('exports the cancelled run span (status CANCELLED, the reason) that its step spans point at, with a trace endpoint set', async () => {
    const receiver = await startOtlpReceiver();
    const saved = { ...process.env };
    process.env.OTEL_EXPORTER_OTLP_ENDPOINT = receiver.url;
    process.env.OTEL_EXPORTER_OTLP_PROTOCOL = 'http/json';
    try {
      const executionId = 'cancel-traced';
      const { running } = await runWaitingOnModel(askWorkflow('cancel-traced'), executionId);
      await e2e.runtime.cancel(executionId, { reason: 'over budget' });
      expect((await running).status).toBe('CANCELLED');
      const runSpan = () => receiver.spans.find((span) => span.name === 'invoke_workflow cancel-traced');
      await vi.waitFor(() => expect(runSpan()).toBeDefined(), SOON);
      expect(runSpan()!.attributes).toMatchObject({
        'stepthread.run.status': 'CANCELLED',
        'stepthread.run.cancel_reason': 'over budget',
        'stepthread.execution.id': executionId,
      });
      // The run's steps (START and the CODE before the model call) are children of that span.
      await vi.waitFor(
        () => expect(receiver.spans.filter((span) => span.name === 'step topic')).toHaveLength(1),
        SOON,
      );
      const step = receiver.spans.find((span) => span.name === 'step topic')!;
      expect(step.traceId).toBe(runSpan()!.traceId);
      expect(step.parentSpanId).toBe(runSpan()!.spanId);
    } finally {
      for (const key of Object.keys(process.env)) if (!(key in saved)) delete process.env[key];
      Object.assign(process.env, saved);
      await receiver.close();
    }
  });
});
