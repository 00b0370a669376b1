/** Recording node results on a thread. */
import { StepthreadError } from '../errors.ts';
import { DEFAULT_MAX_STEPS } from '../model/schema.ts';
import type { NodeResult, Thread } from './types.ts';

/**
 * Stores `result` as the latest result of its node and appends an execution-history entry.
 * Throws MAX_STEPS_EXCEEDED when the run would exceed `maxSteps` node executions.
 */
export function recordNodeResult(thread: Thread, result: NodeResult, maxSteps = DEFAULT_MAX_STEPS): Thread {
  const step = thread.executionHistory.length + 1;
  if (step > maxSteps) {
    throw new StepthreadError('MAX_STEPS_EXCEEDED', `the run exceeded ${maxSteps} node executions`, {
      nodeId: result.nodeId,
    });
  }
  return {
    ...thread,
    currentNodeId: result.nodeId,
    nodeResults: { ...thread.nodeResults, [result.nodeId]: result },
    executionHistory: [
      ...thread.executionHistory,
      { nodeId: result.nodeId, nodeType: result.nodeType, status: result.status, at: result.endedAt, step },
    ],
  };
}
