/** Shared test data for the store tests. */
import type { Message } from '../../engine/conversation/types.ts';
import type { Thread } from '../../engine/thread/types.ts';

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
