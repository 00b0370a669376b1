/** Shared builders for thread tests: a deterministic env and hand-built plain data. */
import type { ConversationState } from '../../../engine/conversation/types.ts';
import type { Workflow } from '../../../engine/model/schema.ts';
import type { EngineEnv, Thread } from '../../../engine/thread/types.ts';

/** Ids `<prefix>-1, -2, …`; times one second apart from 2024-01-01T00:00:00Z. */
export function testEnv(prefix = 'id'): EngineEnv {
  let ids = 0;
  let seconds = 0;
  return {
    now: () => new Date(Date.UTC(2024, 0, 1, 0, 0, seconds++)).toISOString(),
    newId: () => `${prefix}-${++ids}`,
  };
}

export function conversation(threadId: string, length = 3): ConversationState {
  return {
    threadId,
    log: { id: 'log-abc', length },
    index: {
      visible: length > 0 ? [[0, length]] : [],
      batches: [{ boundary: 0, visibleBefore: [] }],
      currentBatch: 0,
    },
    tokenUsage: { promptTokens: 10, completionTokens: 5, totalTokens: 15, limit: 1000 },
  };
}

export const workflow: Workflow = {
  id: 'triage',
  version: 3,
  variables: [
    { name: 'settings', type: 'object', scope: 'global', initial: { mode: 'fast' } },
    { name: 'ticket', type: 'object', scope: 'thread', initial: { tags: ['a'] } },
    { name: 'count', type: 'number', initial: 0 },
    { name: 'owner', type: 'string', readonly: true },
    { name: 'item', scope: 'loop', initial: null },
  ],
  nodes: [
    { id: 'start', type: 'START' },
    { id: 'end', type: 'END' },
  ],
};

/** A thread in the middle of a run, with something in every nested part. */
export function runningThread(id = 'parent'): Thread {
  return {
    id,
    workflowId: 'triage',
    workflowVersion: 3,
    status: 'RUNNING',
    currentNodeId: 'split',
    input: { question: { text: 'why?' } },
    output: { partial: [1, 2] },
    variables: {
      global: { settings: { mode: 'fast' } },
      thread: { ticket: { tags: ['a'] }, count: 2 },
      subgraph: [{ inner: { x: 1 } }],
      loop: [{ item: { n: 1 }, index: 0 }],
    },
    nodeResults: {
      start: {
        nodeId: 'start',
        nodeType: 'START',
        status: 'COMPLETED',
        output: { ok: true },
        startedAt: '2024-01-01T00:00:00.000Z',
        endedAt: '2024-01-01T00:00:01.000Z',
      },
    },
    executionHistory: [
      { nodeId: 'start', nodeType: 'START', status: 'COMPLETED', at: '2024-01-01T00:00:01.000Z', step: 1 },
    ],
    errors: [{ code: 'EXPRESSION_ERROR', message: 'earlier problem', nodeId: 'x' }],
    metadata: { executionId: 'exec-1', tags: { team: 'ops' } },
    contextData: { note: { k: 'v' } },
    conversation: conversation(id),
    startTime: '2023-12-31T23:00:00.000Z',
    endTime: '2023-12-31T23:30:00.000Z',
  };
}
