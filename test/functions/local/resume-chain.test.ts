/**
 * Resuming a run that continued (continue-as-new), in-process: a run is stopped for good at every
 * phase of a continuation — before the `:continue` Task, after it, once the execution ended CONTINUED,
 * before the successor's claim, between the claim and its record, between its record and the
 * predecessor's CONTINUED, before its first node, in the middle of the successor, at the successor's
 * own continuation — and `resume`, given any execution id of the run, follows the chain to the
 * execution in flight and ends the run exactly as a run that never stopped (same steps, chain and
 * names). The pure parts — names, Choice evaluation, the pending successor — are checked on their own.
 *
 * "Stopped for good" is a Task or store call that never settles: nothing after it runs, as when the
 * process is killed there (test/e2e/resume-continued.test.ts kills real processes).
 */
import { spawnSync } from 'node:child_process';
import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ResumeInput } from '../../../engine/asl/continuation.ts';
import type { AslChoiceState } from '../../../engine/asl/index.ts';
import type { Workflow } from '../../../engine/model/schema.ts';
import type { Thread } from '../../../engine/thread/types.ts';
import { createAwsClients } from '../../../functions/aws/clients.ts';
import type { HandlerStores } from '../../../functions/handlers/deps.ts';
import {
  choiceNext,
  continuationPoints,
  executionToResume,
  pendingSuccessor,
  successorName,
} from '../../../functions/local/resume-chain.ts';
import { listRuns, recordLocalRun } from '../../../functions/local/run-registry.ts';
import {
  createLocalRuntime,
  type LocalRuntime,
  type RunOptions,
  type RunOutcome,
  type TaskCall,
} from '../../../functions/local/runtime.ts';
import { executionChainOf } from '../../../functions/stores/execution-chain.ts';
import { type E2e, plain, startE2e, valid } from '../../e2e/helpers.ts';

const NAME = 'e2e-resume-chain';
let e2e: E2e;
beforeAll(async () => {
  e2e = await startE2e('resume-chain');
});
afterAll(() => e2e.close());

const THRESHOLD = 200;
const ITERATIONS = 40;

/** An LLM turn, LOOP_START → VARIABLE count+1 → LOOP_END 40 times, another turn: 5 executions at 200. */
function countingWorkflow(id: string): Workflow {
  return valid({
    id,
    version: 1,
    variables: [
      { name: 'count', type: 'number', scope: 'thread', initial: 0 },
      { name: 'said', type: 'string', scope: 'thread' },
    ],
    // One reply per turn: a model called twice would answer the second time differently.
    profiles: {
      default: {
        provider: 'scripted',
        byNode: { ask: ['Counting now.', 'Asked twice!'], tell: ['All counted.', 'Told twice!'] },
      },
    },
    nodes: [
      { id: 'start', type: 'START' },
      { id: 'ask', type: 'LLM', config: { prompt: 'Count to {{input.n}}' } },
      { id: 'loop', type: 'LOOP_START', config: { loopId: 'l', maxIterations: ITERATIONS } },
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
  });
}

/** Everything a run leaves: the root thread's state, journal and the chain of executions, ids by role. */
async function runState(runtime: LocalRuntime, threadId: string) {
  const { thread } = await runtime.stores.threads.getThread(threadId);
  const journal = await runtime.stores.threads.readJournal(thread.id);
  const chain = await executionChainOf(runtime.stores.executions, thread.metadata.executionId!);
  const state = {
    thread: { status: thread.status, output: thread.output, step: thread.step, errors: thread.errors },
    variables: thread.variables,
    conversation: plain(await runtime.conversationOf(thread)),
    history: journal.executionHistory.map((entry) => [entry.nodeId, entry.status, entry.step]),
    events: journal.events.map(
      (event) =>
        `${event.type} ${'nodeId' in event ? event.nodeId : ''}${
          event.type === 'THREAD_CONTINUED' ? ` ${event.step}` : ''
        }`,
    ),
    results: Object.fromEntries(
      Object.entries(thread.nodeResults).map(([id, result]) => [id, [result.status, result.output]]),
    ),
    metadata: { continuations: thread.metadata.continuations },
    chain: chain.map((record, i) => ({
      status: record.status,
      step: record.continuedFromStep,
      history: record.continuedFromHistory,
      // Successors are named after the root thread and the step they continue at.
      named:
        i === 0
          ? record.executionId === thread.metadata.firstExecutionId
          : record.executionId === successorName(thread.id, record.continuedFromStep!),
      linked: [
        record.continuedFrom === chain[i - 1]?.executionId,
        record.continuedAs === chain[i + 1]?.executionId,
      ],
    })),
  };
  return JSON.parse(JSON.stringify(state).replace(/t-[0-9a-f]{32}/g, '<thread>')) as unknown;
}

/** A successor's input without the ids that differ between runs (they derive from the first execution id). */
function withoutIds(input: ResumeInput) {
  const { executionId: _e, rootThreadId: _r, threadId: _t, ...envelope } = input.resume.envelope;
  return { ...input.resume, envelope };
}

/** Where a run stops for good. */
type KillPoint =
  /** Before the nth first attempt of a Task state (counted over the whole run). */
  | { before: string; nth: number }
  /** After the nth first attempt of a Task state returned (its writes landed). */
  | { after: string; nth: number }
  /** Once the nth execution ended by continuing, before its successor starts. */
  | { continued: number }
  /** Before the nth continuation's `stepthread:resume` writes this execution record call. */
  | { store: 'putExecution' | 'setExecutionStatus'; nth: number };

const forever = new Promise<never>(() => {});

/** Runs until the kill point, then leaves the run hanging there; resolves with the run's thread id. */
/** Runs until the kill point (from START, or `fromThread` from its current node), then stops there. */
async function runUntil(workflow: Workflow, point: KillPoint, fromThread?: string): Promise<string> {
  let killed!: () => void;
  const stopped = new Promise<void>((resolve) => {
    killed = resolve;
  });
  const counts = new Map<string, number>();
  const count = (key: string) => {
    const n = (counts.get(key) ?? 0) + 1;
    counts.set(key, n);
    return n;
  };
  const base = e2e.runtime.stores;
  const wrap =
    <A extends unknown[], R>(name: 'putExecution' | 'setExecutionStatus', call: (...args: A) => Promise<R>) =>
    (...args: A): Promise<R> => {
      const continuing =
        name === 'putExecution'
          ? (args[0] as { continuedFrom?: string }).continuedFrom !== undefined
          : args[1] === 'CONTINUED';
      if ('store' in point && point.store === name && continuing && count(name) === point.nth) {
        killed();
        return forever;
      }
      return call(...args);
    };
  const stores: HandlerStores = {
    ...base,
    executions: {
      ...base.executions,
      putExecution: wrap('putExecution', base.executions.putExecution.bind(base.executions)),
      setExecutionStatus: wrap(
        'setExecutionStatus',
        base.executions.setExecutionStatus.bind(base.executions),
      ),
    },
  };
  const clients = createAwsClients(e2e.services.target, { tableName: NAME, bucketName: NAME });
  const runtime = createLocalRuntime({ clients, stores });
  let threadId: string | undefined;
  const options: RunOptions = {
    noRetryWaits: true,
    interceptTask: async (call: TaskCall, invoke) => {
      const state = call.entry.stateName;
      const n = call.attempt === 1 ? count(`task ${state}`) : 0;
      if ('before' in point && point.before === state && n === point.nth) {
        killed();
        return forever;
      }
      const result = await invoke();
      threadId ??= fromThread ?? (result as { rootThreadId?: string }).rootThreadId;
      if ('after' in point && point.after === state && n === point.nth) {
        killed();
        return forever;
      }
      return result;
    },
    onContinue: () => {
      if ('continued' in point && count('continued') === point.continued) {
        killed();
        throw new Error('killed');
      }
    },
  };
  const running =
    fromThread === undefined
      ? runtime.prepare(workflow, { continueAfterEvents: THRESHOLD }).run({ n: ITERATIONS }, options)
      : runtime
          .prepare(workflow, { continueAfterEvents: THRESHOLD, startNodeId: 'loop' })
          .runThread(fromThread, options);
  await Promise.race([
    stopped,
    running.then(
      () => Promise.reject(new Error('the run ended before its kill point')),
      () => undefined,
    ),
  ]);
  return threadId!;
}

describe('resuming a run that continued', () => {
  let clean: RunOutcome;
  let expected: unknown;
  /** How many `inc` Tasks each clean execution ran. */
  let incs: number[];
  /** Each clean successor's input. */
  let cleanInputs: ResumeInput[];
  beforeAll(async () => {
    const workflow = countingWorkflow('count-clean');
    clean = await e2e.runtime
      .prepare(workflow, { continueAfterEvents: THRESHOLD })
      .run({ n: ITERATIONS }, { noRetryWaits: true });
    expected = await runState(e2e.runtime, clean.threadId);
    cleanInputs = clean.events
      .filter((event) => event.type === 'ExecutionStarted')
      .slice(1)
      .map((event) => event.input as ResumeInput);
    incs = [];
    for (const event of clean.events) {
      if (event.type === 'ExecutionStarted') incs.push(0);
      if (event.type === 'StateEntered' && event.stateName === 'inc') incs[incs.length - 1]! += 1;
    }
  });

  it('continues the clean run in 5 executions, named after the thread and step', async () => {
    expect(clean.status).toBe('COMPLETED');
    expect(clean.output).toEqual({ count: ITERATIONS, said: 'All counted.' });
    expect(clean.executions.map((execution) => execution.status)).toEqual([
      'CONTINUED',
      'CONTINUED',
      'CONTINUED',
      'CONTINUED',
      'SUCCEEDED',
    ]);
    const { thread } = await e2e.runtime.stores.threads.getThread(clean.threadId);
    const chain = await executionChainOf(e2e.runtime.stores.executions, clean.executionId);
    for (const record of chain.slice(1)) {
      expect(record.executionId).toBe(successorName(thread.id, record.continuedFromStep!));
      expect(record.continuedFromHistory).toBeGreaterThanOrEqual(THRESHOLD);
    }
    // Room for the kill points inside executions 2 and 4.
    expect(incs.slice(0, 4).every((n) => n >= 5)).toBe(true);
  });

  /** `via`: the run resumes by starting the successor its thread is due to continue in, or in a successor. */
  const points: {
    name: string;
    point: KillPoint;
    resumeWith: 'first' | 'last' | 'thread';
    via: 'pending' | 'successor';
    /** For `inc` kill points: nth counts within this execution (1-based). */
    inExecution?: number;
  }[] = [
    {
      name: 'before the first :continue Task',
      point: { before: 'next:continue', nth: 1 },
      resumeWith: 'first',
      via: 'pending',
    },
    {
      name: 'after the :continue Task returned',
      point: { after: 'next:continue', nth: 1 },
      resumeWith: 'thread',
      via: 'pending',
    },
    {
      name: 'once the execution ended CONTINUED',
      point: { continued: 1 },
      resumeWith: 'first',
      via: 'pending',
    },
    {
      name: 'before the successor claimed the thread',
      point: { before: 'stepthread:resume', nth: 1 },
      resumeWith: 'last',
      via: 'pending',
    },
    {
      name: 'after the claim, before its record',
      point: { store: 'putExecution', nth: 1 },
      resumeWith: 'thread',
      via: 'pending',
    },
    {
      name: 'after its record, before the predecessor is CONTINUED',
      point: { store: 'setExecutionStatus', nth: 1 },
      resumeWith: 'first',
      via: 'pending',
    },
    {
      name: 'after the claim, before its first node',
      point: { after: 'stepthread:resume', nth: 1 },
      resumeWith: 'last',
      via: 'pending',
    },
    {
      name: 'in the middle of the successor (committed)',
      point: { after: 'inc', nth: 3 },
      inExecution: 2,
      resumeWith: 'first',
      via: 'successor',
    },
    {
      name: 'in the middle of the successor (in flight)',
      point: { before: 'inc', nth: 5 },
      inExecution: 2,
      resumeWith: 'last',
      via: 'successor',
    },
    {
      name: "at the successor's own :continue",
      point: { before: 'next:continue', nth: 2 },
      resumeWith: 'first',
      via: 'pending',
    },
    {
      name: 'once the second execution ended CONTINUED',
      point: { continued: 2 },
      resumeWith: 'thread',
      via: 'pending',
    },
    {
      name: 'before the third claim',
      point: { before: 'stepthread:resume', nth: 3 },
      resumeWith: 'first',
      via: 'pending',
    },
    {
      name: 'in the middle of the fourth execution',
      point: { after: 'inc', nth: 2 },
      inExecution: 4,
      resumeWith: 'thread',
      via: 'successor',
    },
  ];

  for (const [i, { name, point, resumeWith, via, inExecution }] of points.entries()) {
    it(`stopped ${name}, resumed by the ${resumeWith} id: ends as the clean run`, async () => {
      const workflow = countingWorkflow('count-clean');
      const before = incs.slice(0, (inExecution ?? 1) - 1).reduce((sum, n) => sum + n, 0);
      const at: KillPoint =
        'nth' in point && inExecution !== undefined ? { ...point, nth: before + point.nth } : point;
      const threadId = await runUntil(workflow, at);
      const { thread } = await e2e.runtime.stores.threads.getThread(threadId);
      const stopped = await executionChainOf(
        e2e.runtime.stores.executions,
        thread.metadata.firstExecutionId ?? thread.metadata.executionId!,
      );
      const first = stopped[0]!.executionId;
      const id =
        resumeWith === 'first'
          ? first
          : resumeWith === 'last'
            ? stopped.at(-1)!.executionId
            : (await executionToResume(e2e.runtime.stores.executions, thread))!;
      const runtime = e2e.runtime;
      const prepared = runtime.prepare(workflow, { continueAfterEvents: THRESHOLD });
      const plan = await runtime.resumePlanOf(id);
      expect(plan.chain[0]).toBe(first);
      expect(plan.rootThreadId).toBe(threadId);
      const pending = pendingSuccessor(prepared.definition, thread);
      expect(pending === undefined ? 'successor' : 'pending').toBe(via);
      if (via === 'successor') expect(plan.continuedFrom).toBeDefined();
      const resumed = await prepared.resume(id, { noRetryWaits: true });
      expect(resumed.error, `kill point ${i}`).toBeUndefined();
      expect(resumed.status).toBe('COMPLETED');
      expect(resumed.output).toEqual(clean.output);
      // The in-flight execution ran again under its own id (or its due successor under its name).
      expect(resumed.executions[0]!.executionId).toBe(pending?.name ?? plan.executionId);
      // ... with the input its predecessor passed, as in the clean run (ids aside).
      const started = resumed.events[0]!.input as ResumeInput;
      const same = cleanInputs.find((input) => input.resume.envelope.step === started.resume.envelope.step);
      expect(withoutIds(started)).toEqual(withoutIds(same!));
      expect(started.AWS_STEP_FUNCTIONS_STARTED_BY_EXECUTION_ID).toBe(started.resume.envelope.executionId);
      expect(await runState(runtime, threadId)).toEqual(expected);
      // The run is over: nothing to resume any more.
      await expect(runtime.resumePlanOf(first)).rejects.toThrow(/ended COMPLETED/);
    });
  }

  it('resumes a copy run from one of its nodes (run --thread) that continued, stopped in a successor', async () => {
    const workflow = countingWorkflow('count-clean');
    const { executionHistory } = await e2e.runtime.stores.threads.readJournal(clean.threadId);
    const firstLoop = executionHistory.find((entry) => entry.nodeId === 'loop')!.step;
    // Two copies from the loop's first run: one runs clean, the other is stopped in its third execution.
    const copies = [];
    for (let i = 0; i < 2; i += 1)
      copies.push(await e2e.runtime.copyThread(clean.threadId, { fromStep: firstLoop }));
    const prepared = e2e.runtime.prepare(workflow, { continueAfterEvents: THRESHOLD, startNodeId: 'loop' });
    const again = await prepared.runThread(copies[0]!.id, { noRetryWaits: true });
    expect(again.executions.length).toBeGreaterThan(3);
    const threadId = await runUntil(workflow, { after: 'inc', nth: incs[0]! + incs[1]! + 2 }, copies[1]!.id);
    const { thread } = await e2e.runtime.stores.threads.getThread(threadId);
    const chain = await executionChainOf(e2e.runtime.stores.executions, thread.metadata.executionId!);
    expect(chain.map((record) => record.status)).toEqual(['CONTINUED', 'CONTINUED', 'RUNNING']);
    const plan = await e2e.runtime.resumePlanOf(chain[1]!.executionId);
    expect(plan).toMatchObject({ executionId: chain[2]!.executionId, startNodeId: 'loop' });
    const resumed = await prepared.resume(chain[0]!.executionId, { noRetryWaits: true });
    expect(resumed.error).toBeUndefined();
    expect(resumed.output).toEqual(again.output);
    expect(await runState(e2e.runtime, threadId)).toEqual(await runState(e2e.runtime, copies[0]!.id));
  });

  it('lists the run once as INTERRUPTED, on its in-flight execution, once its process is gone', async () => {
    const workflow = countingWorkflow('count-clean');
    // The successor recorded itself; its predecessor is not marked CONTINUED yet.
    const threadId = await runUntil(workflow, { store: 'setExecutionStatus', nth: 2 });
    const { thread } = await e2e.runtime.stores.threads.getThread(threadId);
    const first = thread.metadata.firstExecutionId!;
    const clients = createAwsClients(e2e.services.target, { tableName: NAME, bucketName: NAME });
    await recordLocalRun(clients, { executionId: first, workflow, now: new Date().toISOString() });
    const ofRun = async () =>
      (await listRuns(clients))
        .filter((run) => run.rootThreadId === threadId)
        .map((run) => [run.executionId, run.status, run.resume]);
    const inFlight = thread.metadata.executionId!;
    // Its process (this one) is alive: running.
    expect((await ofRun()).map(([, status]) => status)).toEqual(['RUNNING', 'CONTINUED', 'CONTINUED']);
    // Gone: the execution in flight is interrupted, the others continued.
    const gone = spawnSync(process.execPath, ['-e', '']).pid;
    await clients.dynamo.send(
      new UpdateCommand({
        TableName: NAME,
        Key: { pk: `EXEC#${first}`, sk: 'LOCAL' },
        UpdateExpression: 'SET pid = :pid',
        ExpressionAttributeValues: { ':pid': gone },
      }),
    );
    const listed = await ofRun();
    expect(listed).toHaveLength(3);
    expect(listed[0]).toEqual([inFlight, 'INTERRUPTED', `stepthread resume ${inFlight}`]);
    expect(listed.slice(1).map(([, status]) => status)).toEqual(['CONTINUED', 'CONTINUED']);
    expect(listed.at(-1)![0]).toBe(first);
  });

  it('plans the in-flight execution from any id of the run, and starts the pending successor', async () => {
    const workflow = countingWorkflow('count-clean');
    const threadId = await runUntil(workflow, { after: 'next:continue', nth: 2 });
    const { thread } = await e2e.runtime.stores.threads.getThread(threadId);
    const chain = await executionChainOf(e2e.runtime.stores.executions, thread.metadata.executionId!);
    expect(chain.map((record) => record.status)).toEqual(['CONTINUED', 'RUNNING']);
    for (const record of chain) {
      const plan = await e2e.runtime.resumePlanOf(record.executionId);
      expect(plan).toMatchObject({
        executionId: chain[1]!.executionId,
        continuedFrom: chain[0]!.executionId,
        chain: chain.map((entry) => entry.executionId),
        started: true,
      });
    }
    // The thread stopped at the second execution's continuation: its successor is due.
    const prepared = e2e.runtime.prepare(workflow, { continueAfterEvents: THRESHOLD });
    const successor = pendingSuccessor(prepared.definition, thread);
    expect(successor?.name).toBe(successorName(thread.id, thread.step!));
    expect(successor?.input).toEqual({
      resume: { at: 'next:choice', node: { id: 'next', type: 'LOOP_END' }, envelope: thread.lastEnvelope },
      AWS_STEP_FUNCTIONS_STARTED_BY_EXECUTION_ID: chain[1]!.executionId,
    });
    // With a higher threshold the same thread is not at a continuation.
    const higher = e2e.runtime.prepare(workflow, { continueAfterEvents: 10_000 });
    expect(pendingSuccessor(higher.definition, thread)).toBeUndefined();
  });
});

describe('chain helpers', () => {
  it('evaluate the continuing Choice as the state machine does', () => {
    const prepared = e2e.runtime.prepare(countingWorkflow('count-helpers'), {
      continueAfterEvents: THRESHOLD,
    });
    const points = continuationPoints(prepared.definition);
    expect([...points.keys()]).toEqual(['next']);
    const point = points.get('next')!;
    expect(point).toMatchObject({ stateName: 'next:continue', at: 'next:choice' });
    const choice = prepared.definition.States[point.at] as AslChoiceState;
    expect(choiceNext(choice, { history: THRESHOLD, loop: { exit: false } })).toBe('next:continue');
    expect(choiceNext(choice, { history: THRESHOLD - 1, loop: { exit: false } })).not.toBe('next:continue');
    expect(choiceNext(choice, { loop: { exit: true } })).not.toBe('next:continue');
  });

  it('see no successor for a thread that is not at a continuation point or moved on', () => {
    const prepared = e2e.runtime.prepare(countingWorkflow('count-helpers'), {
      continueAfterEvents: THRESHOLD,
    });
    const envelope = {
      executionId: 'e-1',
      workflowId: 'count-helpers',
      workflowVersion: 1,
      rootThreadId: 't-1',
      threadId: 't-1',
      step: 9,
      maxSteps: 1000,
      history: 250,
      loop: { exit: false },
      last: { nodeId: 'next', status: 'COMPLETED' as const },
    };
    const thread = {
      id: 't-1',
      step: 9,
      status: 'RUNNING',
      metadata: { executionId: 'e-1' },
      lastEnvelope: envelope,
    } as unknown as Thread;
    expect(pendingSuccessor(prepared.definition, thread)?.name).toBe(successorName('t-1', 9));
    const claimed = { ...thread, metadata: { executionId: successorName('t-1', 9) } };
    expect(pendingSuccessor(prepared.definition, claimed)?.name).toBe(successorName('t-1', 9));
    const elsewhere = { ...thread, metadata: { executionId: 'e-other' } };
    expect(pendingSuccessor(prepared.definition, elsewhere)).toBeUndefined();
    const failed = { ...thread, lastEnvelope: { ...envelope, last: { nodeId: 'next', status: 'FAILED' } } };
    expect(pendingSuccessor(prepared.definition, failed as Thread)).toBeUndefined();
    const inc = { ...thread, lastEnvelope: { ...envelope, last: { nodeId: 'inc', status: 'COMPLETED' } } };
    expect(pendingSuccessor(prepared.definition, inc as Thread)).toBeUndefined();
  });
});
