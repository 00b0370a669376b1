import { describe, expect, it } from 'vitest';
import { StepthreadError } from '../../../engine/errors.ts';
import type { Thread } from '../../../engine/thread/types.ts';
import { assertThreadFits, THREAD_ITEM_BUDGET_BYTES } from '../../../functions/handlers/pipeline.ts';

function threadWithHistory(steps: number, big = ''): Thread {
  return {
    id: 't-long',
    workflowId: 'w',
    workflowVersion: 1,
    status: 'RUNNING',
    input: {},
    variables: { global: {}, thread: { big }, subgraph: [], loop: [] },
    nodeResults: {},
    executionHistory: Array.from({ length: steps }, (_, i) => ({
      nodeId: `node-${i % 3}`,
      nodeType: 'VARIABLE' as const,
      status: 'COMPLETED' as const,
      at: '2026-11-22T17:00:00.000Z',
      step: i + 1,
    })),
    errors: [],
    metadata: {},
    contextData: {},
    conversation: {
      threadId: 't-long',
      log: { id: 'empty', length: 0 },
      index: { visible: [], batches: [{ boundary: 0, visibleBefore: [] }], currentBatch: 0 },
      tokenUsage: { promptTokens: 0, completionTokens: 0, totalTokens: 0 },
    },
    startTime: '2026-11-22T17:00:00.000Z',
    step: steps,
  };
}

describe('thread item size guard', () => {
  it('lets a thread well under the DynamoDB item limit run, however long its history', () => {
    // History and results live in their own items: they never count against the head.
    expect(() => assertThreadFits(threadWithHistory(20_000), 'inc')).not.toThrow();
  });

  it('stops a thread whose item would near 400 KB with a coded error naming the node', () => {
    const thread = threadWithHistory(1, 'x'.repeat(360_000));
    expect(JSON.stringify(thread).length).toBeGreaterThan(THREAD_ITEM_BUDGET_BYTES);
    try {
      assertThreadFits(thread, 'inc');
      expect.unreachable();
    } catch (error) {
      expect(error).toBeInstanceOf(StepthreadError);
      expect((error as StepthreadError).code).toBe('THREAD_TOO_LARGE');
      expect((error as StepthreadError).nodeId).toBe('inc');
      expect((error as StepthreadError).message).toContain('after 1 steps');
    }
  });
});
