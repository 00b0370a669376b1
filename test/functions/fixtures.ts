/** Shared test data for the store tests. */
import type { Message } from '../../engine/conversation/types.ts';
import { lineageOf } from '../../engine/thread/index.ts';
import type { Thread } from '../../engine/thread/types.ts';
import type { ThreadStore, VersionedThread } from '../../functions/stores/thread-store.ts';

export function makeThread(id: string, overrides: Partial<Thread> = {}): Thread {
  return {
    id,
    workflowId: 'triage',
    workflowVersion: 1,
    status: 'RUNNING',
    currentNodeId: 'start',
    input: { ticket: 'T-1' },
    variables: { global: {}, thread: { count: 0 }, subgraph: [], loop: [] },
    nodeResults: {},
    executionHistory: [],
    errors: [],
    metadata: { executionId: 'exec-1' },
    contextData: {},
    conversation: {
      threadId: id,
      log: { id: 'empty', length: 0 },
      index: { visible: [], batches: [{ boundary: 0, visibleBefore: [] }], currentBatch: 0 },
      tokenUsage: { promptTokens: 0, completionTokens: 0, totalTokens: 0 },
    },
    startTime: '2025-01-01T00:00:00.000Z',
    ...overrides,
  };
}

export function makeMessages(count: number, from = 0): Message[] {
  return Array.from({ length: count }, (_, i) => ({
    role: (from + i) % 2 === 0 ? 'user' : 'assistant',
    content: `message ${from + i}`,
  }));
}

/**
 * A thread as a whole, the way assertions want it: the head, the latest result of every node that
 * ran on it (and those it reads through its lineage), and its full history and events.
 */
export async function fullThread(store: ThreadStore, threadId: string): Promise<VersionedThread> {
  const { thread, version } = await store.getThread(threadId);
  const [kept, journal, steps] = await Promise.all([
    store.getNodeResults(lineageOf(thread), 'all'),
    store.readJournal(threadId),
    store.readSteps(threadId, { to: thread.step ?? 0 }),
  ]);
  // Kept latest results cover only outputs some node reads; the step records hold every one.
  const nodeResults = {
    ...kept,
    ...Object.fromEntries(steps.map((step) => [step.result.nodeId, step.result])),
  };
  return { thread: { ...thread, nodeResults, ...journal }, version };
}
