/** Recording node results on a thread. */
import { StepthreadError } from '../errors.ts';
import { DEFAULT_MAX_STEPS } from '../model/schema.ts';
import type { NodeResult, Thread } from './types.ts';

/**
 * The failure of the step past `maxSteps`, naming the setting to raise and where it is set (the
 * workflow file's top-level field; no run option overrides it). `maxSteps` bounds each thread's own
 * steps: on a fork path or list item (`forkPathId`, its runtime id) the message says so, since the
 * root's steps and the other branches' are not counted with its own.
 */
export function maxStepsExceeded(maxSteps: number, nodeId: string, forkPathId?: string): StepthreadError {
  const which =
    forkPathId === undefined
      ? 'the run exceeded maxSteps'
      : `fork path ${forkPathId} exceeded maxSteps on its own thread (a fork path or list item counts its own steps)`;
  return new StepthreadError(
    'MAX_STEPS_EXCEEDED',
    `${which}, ${maxSteps} node executions: to allow more, raise "maxSteps" at the top of the workflow file (default ${DEFAULT_MAX_STEPS}; no run option overrides it)`,
    { nodeId },
  );
}

/**
 * Stores `result` as the latest result of its node and appends an execution-history entry.
 * Throws MAX_STEPS_EXCEEDED when the run would exceed `maxSteps` node executions.
 */
export function recordNodeResult(thread: Thread, result: NodeResult, maxSteps = DEFAULT_MAX_STEPS): Thread {
  const step = thread.executionHistory.length + 1;
  if (step > maxSteps) {
    throw maxStepsExceeded(maxSteps, result.nodeId);
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
