/**
 * `stepthread:resume` for a copied thread's first execution (engine/asl/copy-start.ts): claims the copy
 * for this execution as the local runtime's `runThread` does — the thread's executionId and `runFrom`
 * (node, step, when) in one conditional UpdateItem — records the execution, sets the run's budget, and
 * returns the copy's envelope with the Task state to jump to.
 *
 * Idempotent: a retry finds the thread claimed by this execution and redoes the idempotent writes with
 * the time stored at the claim. A copy started already (by another execution, here or locally), ended,
 * standing at another node or step, a fork branch's, or of another workflow is refused
 * (CONTINUATION_CONFLICT), untouched: the execution fails, the thread does not.
 */
import type { CopyStartPoint } from '../../engine/asl/copy-start.ts';
import { StepthreadError } from '../../engine/errors.ts';
import type { Budget } from '../../engine/model/schema.ts';
import { isTerminalStatus } from '../../engine/thread/index.ts';
import type { HandlerDeps } from '../handlers/deps.ts';
import { isRootThread } from '../handlers/pipeline.ts';
import type { IncomingEnvelope, TaskEvent } from '../handlers/task.ts';
import type { ResumedEnvelope } from './resume.ts';
import { budgetMarkOf, parseBudget, requireSpend } from './run-budget.ts';
import { RUN_FROM_KEY, type RunFrom } from './run-from.ts';

const CLAIM_ATTEMPTS = 3;

function conflict(message: string, nodeId: string): StepthreadError {
  return new StepthreadError('CONTINUATION_CONFLICT', message, { nodeId });
}

/** Claims the copy for `executionId`, or finds it claimed by it; the claim. */
async function claimCopy(
  envelope: IncomingEnvelope,
  start: CopyStartPoint,
  workflowId: string,
  executionId: string,
  budget: Budget | undefined,
  deps: HandlerDeps,
): Promise<RunFrom & { at: string }> {
  const nodeId = start.node.id;
  for (let attempt = 1; ; attempt += 1) {
    const { thread, version } = await deps.threads.getThread(envelope.threadId);
    const { metadata } = thread;
    const started = metadata[RUN_FROM_KEY] as RunFrom | undefined;
    if (started?.executionId === executionId && metadata.executionId === executionId) {
      if (typeof started.at !== 'string') {
        throw conflict(`thread ${thread.id} names ${executionId} without a claim time`, nodeId);
      }
      return started as RunFrom & { at: string };
    }
    if (started !== undefined) {
      throw conflict(
        `thread ${thread.id} was started already, by execution ${started.executionId}: copy it again to run it once more`,
        nodeId,
      );
    }
    if (thread.workflowId !== workflowId) {
      throw conflict(
        `thread ${thread.id} belongs to workflow ${thread.workflowId}, not ${workflowId}`,
        nodeId,
      );
    }
    if (thread.metadata.forkPathId !== undefined) {
      throw conflict(`thread ${thread.id} is a fork branch's thread; it runs only inside its FORK`, nodeId);
    }
    if (isTerminalStatus(thread.status)) {
      throw conflict(`thread ${thread.id} is ${thread.status}; copy it and start the copy`, nodeId);
    }
    const step = thread.step ?? 0;
    if (step !== envelope.step || thread.currentNodeId !== nodeId) {
      throw conflict(
        `thread ${thread.id} is at step ${step}, node ${thread.currentNodeId ?? '(none)'}; the execution was started for step ${envelope.step}, node ${nodeId}`,
        nodeId,
      );
    }
    const at = deps.env.now();
    const runFrom: RunFrom & { at: string } = { executionId, nodeId, step, at };
    // The copy becomes this execution's root; runs its source continued through are not this one's.
    // Its budget is this start's: the claim marks a copy that has none (run-budget.ts).
    const {
      firstExecutionId: _first,
      continuations: _continuations,
      continuedAt: _at,
      noBudget: _noBudget,
      ...kept
    } = metadata;
    try {
      await deps.threads.updateThread(thread.id, version, {
        set: { metadata: { ...kept, executionId, [RUN_FROM_KEY]: runFrom, ...budgetMarkOf(budget) } },
      });
      return runFrom;
    } catch (error) {
      // Another start raced this one: reload and decide again (it finds the thread started).
      if (
        !(error instanceof StepthreadError && error.code === 'VERSION_CONFLICT') ||
        attempt >= CLAIM_ATTEMPTS
      ) {
        throw error;
      }
    }
  }
}

export async function runCopyStart(
  event: TaskEvent,
  start: CopyStartPoint,
  deps: HandlerDeps,
): Promise<ResumedEnvelope> {
  const { envelope, executionId } = event;
  const workflowId = (event.node as { workflowId?: string }).workflowId ?? envelope.workflowId;
  if (executionId === undefined) {
    throw new StepthreadError('INVALID_TASK_INPUT', 'a copy start needs executionId', {
      nodeId: event.node.id,
    });
  }
  if (!isRootThread(envelope)) {
    throw conflict(
      `thread ${envelope.threadId} is not its own root; only a copy's root thread starts`,
      start.node.id,
    );
  }
  // Checked before the claim, so a budget that cannot be used leaves the copy unstarted.
  const budget = start.budget === undefined ? undefined : parseBudget(start.budget, start.node.id);
  const claim = await claimCopy(envelope, start, workflowId, executionId, budget, deps);
  const { thread } = await deps.threads.getThread(envelope.threadId);
  if (budget !== undefined) await requireSpend(deps).setBudget(thread.id, budget);
  await deps.executions.putExecution({
    executionId,
    rootThreadId: thread.id,
    workflowId: thread.workflowId,
    workflowVersion: thread.workflowVersion,
    status: 'RUNNING',
    startTime: claim.at,
  });
  return {
    executionId,
    workflowId: thread.workflowId,
    workflowVersion: thread.workflowVersion,
    rootThreadId: thread.id,
    threadId: thread.id,
    step: claim.step,
    maxSteps: envelope.maxSteps,
    ...(event.historyEvents === undefined ? {} : { history: event.historyEvents }),
    resumeAt: start.at,
  };
}
