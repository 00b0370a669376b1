/** Shared setup for the handler tests: embedded stores, metered clients, a fixed clock, crash injection. */
import type { Message } from '../../../engine/conversation/types.ts';
import type { Envelope, Thread } from '../../../engine/thread/types.ts';
import { createAwsClients } from '../../../functions/aws/clients.ts';
import { type Meter, meterClient } from '../../../functions/aws/meter.ts';
import {
  createHandlerStores,
  type HandlerDeps,
  type HandlerStores,
} from '../../../functions/handlers/deps.ts';
import { dispatch } from '../../../functions/handlers/dispatch.ts';
import type { TaskNode } from '../../../functions/handlers/task.ts';
import { type LocalServices, startLocalServices } from '../../../functions/local/services.ts';
import { createConversationStore, SegmentCache } from '../../../functions/stores/conversation-store.ts';

export interface Harness {
  services: LocalServices;
  stores: HandlerStores;
  dynamoMeter: Meter;
  s3Meter: Meter;
  deps(overrides?: Partial<HandlerDeps>): HandlerDeps;
  /** A conversation store with its own empty cache, to read what S3 really holds. */
  readMessages(thread: Thread): Promise<Message[]>;
  close(): Promise<void>;
}

/** A clock that never moves: retried steps then produce byte-identical state. */
export const fixedEnv = {
  now: () => '2025-01-01T00:00:00.000Z',
  newId: (() => {
    let n = 0;
    return () => `id-${++n}`;
  })(),
};

export async function startHarness(name: string): Promise<Harness> {
  const names = { tableName: `handlers-${name}`, bucketName: `handlers-${name}` };
  const services = await startLocalServices({ ephemeral: true, names });
  const clients = createAwsClients(services.target, names);
  const stores = {
    ...createHandlerStores(clients),
    // A private cache, so one test's segments never make another's reads free.
    conversations: createConversationStore(clients, { cache: new SegmentCache() }),
  };
  return {
    services,
    stores,
    dynamoMeter: meterClient(clients.dynamo),
    s3Meter: meterClient(clients.s3),
    deps: (overrides = {}) => ({ ...stores, env: fixedEnv, ...overrides }),
    async readMessages(thread) {
      const fresh = createConversationStore(clients, { cache: new SegmentCache() });
      const log = await fresh.readLog(thread.conversation.log);
      const positions: number[] = [];
      for (const [start, end] of thread.conversation.index.visible)
        for (let p = start; p < end; p += 1) positions.push(p);
      return positions.map((p) => log[p]!);
    },
    close: () => services.close(),
  };
}

export const WORKFLOW = { id: 'wf', version: 1, maxSteps: 100, variables: [] };

export function startNode(variables: TaskNode['variables'] = []): TaskNode {
  return { id: 'start', type: 'START', workflow: { ...WORKFLOW, variables } };
}

export function startEvent(
  executionId: string,
  input: Record<string, unknown> = {},
  variables: TaskNode['variables'] = [],
) {
  return { action: 'execute' as const, node: startNode(variables), executionId, input: { input } };
}

export function task(node: TaskNode, envelope: Envelope, action = 'execute') {
  return { action, node, envelope };
}

export async function run(
  deps: HandlerDeps,
  node: TaskNode,
  envelope: Envelope,
  action = 'execute',
): Promise<Envelope> {
  return (await dispatch(task(node, envelope, action), deps)) as Envelope;
}

export async function failureOf(promise: Promise<unknown>): Promise<Error> {
  try {
    await promise;
  } catch (error) {
    return error as Error;
  }
  throw new Error('expected the task to fail');
}

export const INJECTED = 'injected crash';

/**
 * Stores whose `crashAt`-th write (counting every write method) succeeds and then throws, as if
 * the Lambda died right after it. `writes()` counts writes so a fault-free run can size the sweep.
 */
export function crashingStores(stores: HandlerStores, crashAt: number): HandlerStores & { writes(): number } {
  let count = 0;
  const wrap =
    <A extends unknown[], R>(fn: (...args: A) => Promise<R>) =>
    async (...args: A): Promise<R> => {
      const result = await fn(...args);
      count += 1;
      if (count === crashAt) throw new Error(INJECTED);
      return result;
    };
  const { threads, conversations, joins, executions, values } = stores;
  return {
    threads: {
      ...threads,
      getThread: threads.getThread.bind(threads),
      getThreads: threads.getThreads.bind(threads),
      listThreadsOfExecution: threads.listThreadsOfExecution.bind(threads),
      createThread: wrap(threads.createThread.bind(threads)),
      createForkChildren: wrap(threads.createForkChildren.bind(threads)),
      updateThread: wrap(threads.updateThread.bind(threads)),
      putNodeResults: wrap(threads.putNodeResults.bind(threads)),
      putStepOnce: wrap(threads.putStepOnce.bind(threads)),
      addToGlobal: wrap(threads.addToGlobal.bind(threads)),
      forgetGlobalWriter: wrap(threads.forgetGlobalWriter.bind(threads)),
    },
    ...(values
      ? { values: { read: values.read.bind(values), putValues: wrap(values.putValues.bind(values)) } }
      : {}),
    conversations: {
      readLog: conversations.readLog.bind(conversations),
      readMessage: conversations.readMessage.bind(conversations),
      appendMessages: wrap(conversations.appendMessages.bind(conversations)),
      // The writes of a prepared append count as one (its segment with the page it fills).
      prepareAppend: async (pointer, messages) => {
        const prepared = await conversations.prepareAppend(pointer, messages);
        return { pointer: prepared.pointer, write: wrap(prepared.write.bind(prepared)) };
      },
    },
    joins: {
      getBranchOutcomes: joins.getBranchOutcomes.bind(joins),
      recordBranchOutcome: wrap(
        joins.recordBranchOutcome.bind(joins),
      ) as HandlerStores['joins']['recordBranchOutcome'],
      countItem: wrap(joins.countItem.bind(joins)),
    },
    executions: {
      ...executions,
      getExecution: executions.getExecution.bind(executions),
      listExecutions: executions.listExecutions.bind(executions),
      putExecution: wrap(executions.putExecution.bind(executions)),
      setExecutionStatus: wrap(executions.setExecutionStatus.bind(executions)),
    },
    writes: () => count,
  };
}

/** Calls a task, retrying once (with the same input) when the injected crash hit it. */
export async function withRetry<T>(call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (error) {
    if (error instanceof Error && error.message === INJECTED) return call();
    throw error;
  }
}
