/**
 * Continue-as-new on the embedded runtime (issue 8): with a low threshold a long run moves through
 * several executions of the same definition, and everything the run leaves — output, variables,
 * conversation, node history, events, final status — equals a run that never continued, crashes
 * included. The history estimate in each envelope is checked against what Step Functions would have
 * recorded for the same states.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildInspectReport } from '../../cli/commands/inspect.ts';
import { openInteractions } from '../../cli/commands/pending.ts';
import type { ResumeInput } from '../../engine/asl/continuation.ts';
import type { Workflow } from '../../engine/model/schema.ts';
import type { RunOutcome } from '../../functions/local/runtime.ts';
import { crashAfterFirstAttempt, type E2e, plain, startE2e, valid } from './helpers.ts';

let e2e: E2e;
beforeAll(async () => {
  e2e = await startE2e('continue');
});
afterAll(() => e2e.close());

/** What a continuing execution records after its check: the continue Task (6), the CONTINUED Pass (2), its end (1). */
const AFTER_CHECK = 9;

/** An LLM turn, then LOOP_START → VARIABLE count+1 → LOOP_END `iterations` times, then another turn. */
function countingWorkflow(iterations: number, extra: Partial<Workflow> = {}, dataSource?: string): Workflow {
  return valid({
    id: `count-${iterations}`,
    version: 1,
    maxSteps: 100_000,
    variables: [
      { name: 'count', type: 'number', scope: 'thread', initial: 0 },
      { name: 'said', type: 'string', scope: 'thread' },
    ],
    profiles: {
      default: {
        provider: 'scripted',
        byNode: { ask: ['Counting now.'], tell: ['All counted.', 'Counted again.'] },
      },
    },
    nodes: [
      { id: 'start', type: 'START' },
      { id: 'ask', type: 'LLM', config: { prompt: 'Count to {{input.n}}' } },
      {
        id: 'loop',
        type: 'LOOP_START',
        config: { loopId: 'l', maxIterations: iterations, ...(dataSource ? { dataSource } : {}) },
      },
      {
        id: 'inc',
        type: 'VARIABLE',
        config: { variableName: 'count', variableType: 'number', expression: 'count + 1' },
      },
      { id: 'next', type: 'LOOP_END', config: { loopId: 'l' } },
      { id: 'tell', type: 'LLM', config: { prompt: 'Counted {{count}}', outputVariable: 'said' } },
      { id: 'end', type: 'END', config: { output: { count: '{{count}}', said: '{{said}}' } } },
    ],
    edges: [
      { from: 'start', to: 'ask' },
      { from: 'ask', to: 'loop' },
      { from: 'loop', to: 'inc' },
      { from: 'inc', to: 'next' },
      { from: 'next', to: 'tell' },
      { from: 'tell', to: 'end' },
    ],
    ...extra,
  });
}

/** Everything a run leaves on its root thread that must not depend on how many executions ran it. */
async function runState(outcome: RunOutcome) {
  const { thread } = await e2e.runtime.stores.threads.getThread(outcome.threadId);
  const journal = await e2e.runtime.stores.threads.readJournal(thread.id);
  const state = {
    status: outcome.status,
    output: outcome.output,
    thread: { status: thread.status, output: thread.output, step: thread.step, errors: thread.errors },
    variables: thread.variables,
    contextData: thread.contextData,
    conversation: plain(await e2e.runtime.conversationOf(thread)),
    history: journal.executionHistory.map((entry) => [entry.nodeId, entry.status, entry.step]),
    events: journal.events
      .filter((event) => event.type !== 'THREAD_CONTINUED')
      .map((event) => `${event.type} ${'nodeId' in event ? event.nodeId : ''}`),
    results: Object.fromEntries(
      Object.entries(thread.nodeResults).map(([id, result]) => [id, [result.status, result.output]]),
    ),
  };
  // Thread ids derive from the first execution's id: two runs differ only there.
  return JSON.parse(JSON.stringify(state).replace(/t-[0-9a-f]{32}/g, '<thread>')) as unknown;
}

/** Each successor's input, in order: the resume marker with the envelope its predecessor continued with. */
function resumeInputs(outcome: RunOutcome): ResumeInput[] {
  return outcome.events
    .filter((event) => event.type === 'ExecutionStarted')
    .slice(1)
    .map((event) => event.input as ResumeInput);
}

describe('continue-as-new on the embedded runtime', () => {
  it('a 2,000-step loop crosses several continuations and ends as a run without them does', async () => {
    const workflow = countingWorkflow(666);
    const input = { n: 666 };
    const single = await e2e.runtime.prepare(workflow).run(input, { noRetryWaits: true });
    const continued = await e2e.runtime
      .prepare(workflow, { continueAfterEvents: 2_000 })
      .run(input, { noRetryWaits: true });

    expect(single.status).toBe('COMPLETED');
    expect(single.output).toEqual({ count: 666, said: 'All counted.' });
    // At the default threshold (20,000) the run fits one execution: 12,700 events for 2,003 steps.
    expect(single.executions).toHaveLength(1);
    expect(single.executions[0]!.historyEvents).toBeGreaterThan(12_000);
    expect(single.executions[0]!.historyEvents).toBeLessThan(13_000);

    const chain = continued.executions;
    expect(chain).toHaveLength(7);
    expect(chain.map((execution) => execution.status)).toEqual([
      ...chain.slice(1).map(() => 'CONTINUED'),
      'SUCCEEDED',
    ]);
    expect(continued.executionId).toBe(chain.at(-1)!.executionId);
    expect(await runState(continued)).toEqual(await runState(single));
    const { thread } = await e2e.runtime.stores.threads.getThread(continued.threadId);
    expect(thread.step).toBe(2_003);

    // The estimate each execution continued at, against the events its states really produce.
    const resumes = resumeInputs(continued);
    expect(resumes).toHaveLength(chain.length - 1);
    resumes.forEach((resume, i) => {
      const estimate = resume.resume.envelope.history!;
      expect(estimate).toBeGreaterThanOrEqual(2_000);
      expect(estimate).toBeLessThan(2_000 + 19); // one loop iteration past the threshold at most
      expect(chain[i]!.historyEvents).toBe(estimate + AFTER_CHECK);
      expect(resume.resume).toMatchObject({ at: 'next:choice', node: { id: 'next', type: 'LOOP_END' } });
      expect(resume.AWS_STEP_FUNCTIONS_STARTED_BY_EXECUTION_ID).toBe(chain[i]!.executionId);
    });

    // The thread, the execution records and the events name the chain.
    expect(thread.metadata).toMatchObject({
      executionId: chain.at(-1)!.executionId,
      firstExecutionId: chain[0]!.executionId,
      continuations: chain.length - 1,
    });
    const records = await Promise.all(
      chain.map((execution) => e2e.runtime.stores.executions.getExecution(execution.executionId)),
    );
    expect(records.map((record) => record.status)).toEqual([
      ...chain.slice(1).map(() => 'CONTINUED'),
      'COMPLETED',
    ]);
    records.forEach((record, i) => {
      expect(record.rootThreadId).toBe(thread.id);
      expect(record.continuedAs).toBe(chain[i + 1]?.executionId);
      expect(record.continuedFrom).toBe(chain[i - 1]?.executionId);
    });
    const journal = await e2e.runtime.stores.threads.readJournal(thread.id);
    const continuedEvents = journal.events.filter((event) => event.type === 'THREAD_CONTINUED');
    expect(continuedEvents.map((event) => [event.fromExecutionId, event.toExecutionId])).toEqual(
      chain.slice(1).map((execution, i) => [chain[i]!.executionId, execution.executionId]),
    );
    // Each predecessor's output says it continued and names its successor.
    const outputs = continued.events
      .filter((event) => event.type === 'ExecutionSucceeded')
      .map((event) => event.output);
    expect(outputs.slice(0, -1)).toEqual(
      chain.slice(1).map((execution, i) => ({
        status: 'CONTINUED',
        continuedAs: execution.executionId,
        threadId: thread.id,
        step: resumes[i]!.resume.envelope.step,
      })),
    );
  }, 180_000);

  it('a crash after every Task, continue and resume included, leaves the same run', async () => {
    const workflow = countingWorkflow(40);
    const prepared = e2e.runtime.prepare(workflow, { continueAfterEvents: 300 });
    const single = await e2e.runtime.prepare(workflow).run({ n: 40 }, { noRetryWaits: true });
    const clean = await prepared.run({ n: 40 }, { noRetryWaits: true });
    const crashed: string[] = [];
    const faulty = await prepared.run(
      { n: 40 },
      { noRetryWaits: true, interceptTask: crashAfterFirstAttempt(crashed) },
    );
    expect(clean.executions.length).toBeGreaterThanOrEqual(3);
    expect(faulty.executions.length).toBe(clean.executions.length);
    for (const state of [
      'start',
      'ask',
      'loop',
      'inc',
      'next',
      'next:continue',
      'stepthread:resume',
      'end',
    ]) {
      expect(crashed).toContain(state);
    }
    expect(crashed.filter((state) => state === 'next:continue')).toHaveLength(clean.executions.length - 1);
    expect(faulty.taskInvocations).toBeGreaterThan(clean.taskInvocations);
    const expected = await runState(single);
    expect(await runState(clean)).toEqual(expected);
    expect(await runState(faulty)).toEqual(expected);
    // Retries are not in the estimate (the margin covers them): 3 more events per retried Task.
    const retried = faulty.events.filter((event) => event.type === 'StateRetried').length;
    const extra = faulty.executions.reduce((sum, execution) => sum + execution.historyEvents, 0);
    const base = clean.executions.reduce((sum, execution) => sum + execution.historyEvents, 0);
    expect(extra).toBe(base + 3 * retried);
  });

  it('continues a copy run from one of its nodes (run --thread) the same way', async () => {
    const workflow = countingWorkflow(30);
    const first = await e2e.runtime
      .prepare(workflow, { continueAfterEvents: 200 })
      .run({ n: 30 }, { noRetryWaits: true });
    expect(first.executions.length).toBeGreaterThan(1);
    // Time travel to the loop's first run: the copy counts all over again, across continuations.
    const { executionHistory } = await e2e.runtime.stores.threads.readJournal(first.threadId);
    const firstLoop = executionHistory.find((entry) => entry.nodeId === 'loop')!.step;
    const copy = await e2e.runtime.copyThread(first.threadId, { fromStep: firstLoop });
    expect(copy.metadata).not.toHaveProperty('firstExecutionId');
    const again = await e2e.runtime
      .prepare(workflow, { startNodeId: 'loop', continueAfterEvents: 200 })
      .runThread(copy.id, { noRetryWaits: true });
    expect(again.error).toBeUndefined();
    expect(again.status).toBe('COMPLETED');
    expect(again.executions.length).toBeGreaterThan(1);
    expect(again.output).toEqual(first.output);
    const { thread } = await e2e.runtime.stores.threads.getThread(copy.id);
    expect(thread.metadata).toMatchObject({
      executionId: again.executionId,
      firstExecutionId: again.executions[0]!.executionId,
    });
  });

  it('keeps maxSteps for the whole run, not per execution', async () => {
    // The count comes from the input: a fixed one over maxSteps is refused by validate.
    const workflow = countingWorkflow(60, { maxSteps: 100 }, '{{input.n}}');
    const single = await e2e.runtime.prepare(workflow).run({ n: 60 }, { noRetryWaits: true });
    const continued = await e2e.runtime
      .prepare(workflow, { continueAfterEvents: 200 })
      .run({ n: 60 }, { noRetryWaits: true });
    expect(continued.executions.length).toBeGreaterThan(2);
    expect(single.status).toBe('FAILED');
    expect(continued.error).toMatchObject({ code: 'MAX_STEPS_EXCEEDED' });
    expect(await runState(continued)).toEqual(await runState(single));
  });

  it('counts fork paths into the loop that continues, and inspect of the first execution shows the whole run', async () => {
    const rounds = 12;
    const workflow = valid({
      id: 'fork-rounds',
      version: 1,
      profiles: { default: { provider: 'scripted', responses: ['noted'] } },
      nodes: [
        { id: 'start', type: 'START' },
        { id: 'round', type: 'LOOP_START', config: { loopId: 'r', maxIterations: rounds } },
        {
          id: 'split',
          type: 'FORK',
          config: { forkPathIds: ['a', 'b'], forkStrategy: 'parallel', childNodeIds: ['a1', 'b1'] },
        },
        { id: 'a1', type: 'LLM', config: { prompt: 'a {{index}}' } },
        { id: 'a2', type: 'LLM', config: { prompt: 'a again' } },
        { id: 'b1', type: 'LLM', config: { prompt: 'b {{index}}' } },
        {
          id: 'merge',
          type: 'JOIN',
          config: { forkPathIds: ['a', 'b'], joinStrategy: 'ALL_COMPLETED', mainPathId: 'a' },
        },
        { id: 'next-round', type: 'LOOP_END', config: { loopId: 'r' } },
        { id: 'end', type: 'END' },
      ],
      edges: [
        { from: 'start', to: 'round' },
        { from: 'round', to: 'split' },
        { from: 'a1', to: 'a2' },
        { from: 'a2', to: 'merge' },
        { from: 'b1', to: 'merge' },
        { from: 'merge', to: 'next-round' },
        { from: 'next-round', to: 'end' },
      ],
    });
    const single = await e2e.runtime.prepare(workflow).run({}, { noRetryWaits: true });
    const continued = await e2e.runtime
      .prepare(workflow, { continueAfterEvents: 300 })
      .run({}, { noRetryWaits: true });
    const chain = continued.executions;
    expect(chain.length).toBeGreaterThanOrEqual(3);
    expect(await runState(continued)).toEqual(await runState(single));

    // Conservative: the estimate never falls below what ran, and stays within the fork's slack.
    resumeInputs(continued).forEach((resume, i) => {
      const estimate = resume.resume.envelope.history! + AFTER_CHECK;
      expect(estimate).toBeGreaterThanOrEqual(chain[i]!.historyEvents);
      expect(estimate - chain[i]!.historyEvents).toBeLessThanOrEqual(10 * rounds);
    });

    const first = chain[0]!.executionId;
    const report = await buildInspectReport(e2e.runtime, first);
    expect(report.executionId).toBe(first);
    expect(report.executionStatus).toBe('CONTINUED');
    expect(report.executions).toEqual(
      chain.map((execution, i) => ({
        executionId: execution.executionId,
        status: i === chain.length - 1 ? 'COMPLETED' : 'CONTINUED',
      })),
    );
    const root = report.threads[0]!;
    expect(root.threadId).toBe(continued.threadId);
    const { thread } = await e2e.runtime.stores.threads.getThread(continued.threadId);
    expect(root.nodes).toHaveLength(thread.step!);
    expect(root.nodes.filter((run) => run.nodeId === 'merge')).toHaveLength(rounds);
    // Every round's children, those forked by later executions too.
    expect(report.threads).toHaveLength(1 + 2 * rounds);
    expect(root.children).toHaveLength(2 * rounds);
    const fromLast = await buildInspectReport(e2e.runtime, continued.executionId);
    expect(fromLast.threads.map((entry) => entry.threadId).sort()).toEqual(
      report.threads.map((entry) => entry.threadId).sort(),
    );
    expect(fromLast.executions).toEqual(report.executions);
  });

  it('pending of the first execution finds an interaction its successor waits on', async () => {
    const workflow = valid({
      id: 'count-then-ask',
      version: 1,
      variables: [{ name: 'count', type: 'number', scope: 'thread', initial: 0 }],
      nodes: [
        { id: 'start', type: 'START' },
        { id: 'loop', type: 'LOOP_START', config: { loopId: 'l', maxIterations: 30 } },
        {
          id: 'inc',
          type: 'VARIABLE',
          config: { variableName: 'count', variableType: 'number', expression: 'count + 1' },
        },
        { id: 'next', type: 'LOOP_END', config: { loopId: 'l' } },
        {
          id: 'approve',
          type: 'USER_INTERACTION',
          config: {
            userInteractionType: 'ask_for_approval',
            showMessage: 'Counted {{count}}. Ship it?',
            outputVariable: 'approved',
          },
        },
        { id: 'end', type: 'END', config: { output: { count: '{{count}}', approved: '{{approved}}' } } },
      ],
      edges: [
        { from: 'start', to: 'loop' },
        { from: 'loop', to: 'inc' },
        { from: 'inc', to: 'next' },
        { from: 'next', to: 'approve' },
        { from: 'approve', to: 'end' },
      ],
    });
    const { interactions, executions } = e2e.runtime.stores;
    let firstExecution: string | undefined;
    const seen: string[][] = [];
    const outcome = await e2e.runtime.prepare(workflow, { continueAfterEvents: 200 }).run(
      {},
      {
        noRetryWaits: true,
        onContinue: (ended) => {
          firstExecution ??= ended.executionId;
        },
        answerInteraction: async () => {
          const open = await openInteractions(interactions!, firstExecution!, executions);
          seen.push(open.map((entry) => `${entry.interactionId} ${entry.executionId}`));
          return { kind: 'approve' };
        },
      },
    );
    expect(outcome.status).toBe('COMPLETED');
    expect(outcome.executions.length).toBeGreaterThanOrEqual(2);
    expect(seen).toEqual([[`${outcome.threadId}/approve ${outcome.executionId}`]]);
    expect(await openInteractions(interactions!, firstExecution!, executions)).toEqual([]);
  });
});
