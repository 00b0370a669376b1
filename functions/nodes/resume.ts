/**
 * `stepthread:resume` (START's function): the first Task of an execution that continues a run
 * (continue-as-new, engine/asl/continuation.ts). It claims the root thread for this execution — the
 * thread stays where the execution that continued left it: same id, same step, same variables and
 * conversation — records the execution (linked both ways with its predecessor, with the step and
 * history estimate it continued at, from which `stepthread resume` rebuilds this input), and returns the
 * envelope with this execution's id, a fresh history count and the Choice state to resume at.
 *
 * Idempotent: a retry finds the thread already claimed and redoes the idempotent record writes with
 * the time stored at the claim. A second execution started for the same continuation (it cannot be,
 * the name is fixed, but still) finds the thread claimed by another and fails without touching it.
 */

import { isCopyStart } from '../../engine/asl/copy-start.ts';
import { StepthreadError } from '../../engine/errors.ts';
import { createEvent, type ThreadContinuedEvent } from '../../engine/events.ts';
import { isTerminalStatus } from '../../engine/thread/index.ts';
import type { Envelope, Thread } from '../../engine/thread/types.ts';
import { publishCommitted } from '../events/publisher.ts';
import type { HandlerDeps } from '../handlers/deps.ts';
import { isRootThread, nextEnvelope } from '../handlers/pipeline.ts';
import type { TaskEvent } from '../handlers/task.ts';
import { runCopyStart } from './copy-start.ts';

/** The envelope a resumed execution continues with; `resumeAt` is read by `stepthread:resume-at`. */
export type ResumedEnvelope = Envelope & { resumeAt: string };

const CLAIM_ATTEMPTS = 3;

function conflict(message: string, nodeId: string): StepthreadError {
  return new StepthreadError('CONTINUATION_CONFLICT', message, { nodeId });
}

function continuedEvent(
  thread: Pick<Thread, 'id' | 'workflowId'>,
  at: string,
  nodeId: string,
  fromExecutionId: string,
  toExecutionId: string,
  step: number,
): ThreadContinuedEvent {
  return createEvent('THREAD_CONTINUED', {
    threadId: thread.id,
    workflowId: thread.workflowId,
    at,
    nodeId,
    fromExecutionId,
    toExecutionId,
    step,
  });
}

/** Claims the thread for `executionId` (one conditional UpdateItem), or finds it claimed; returns the claim time. */
async function claim(event: TaskEvent, executionId: string, deps: HandlerDeps): Promise<{ at: string }> {
  const { envelope, resume } = event;
  const nodeId = resume!.node.id;
  const predecessor = envelope.executionId;
  for (let attempt = 1; ; attempt += 1) {
    const { thread, version } = await deps.threads.getThread(envelope.threadId);
    const { metadata } = thread;
    if (metadata.executionId === executionId) {
      const at = metadata.continuedAt;
      if (typeof at !== 'string')
        throw conflict(`thread ${thread.id} names ${executionId} without a claim time`, nodeId);
      return { at };
    }
    if (metadata.executionId !== predecessor) {
      throw conflict(
        `thread ${thread.id} runs in execution ${String(metadata.executionId)}, not in ${predecessor}, which asked to continue it`,
        nodeId,
      );
    }
    const step = thread.step ?? 0;
    if (step !== envelope.step || thread.lastEnvelope?.last?.nodeId !== nodeId) {
      throw conflict(
        `thread ${thread.id} is at step ${step} after ${thread.lastEnvelope?.last?.nodeId ?? 'nothing'}; the continuation is for step ${envelope.step} after ${nodeId}`,
        nodeId,
      );
    }
    if (isTerminalStatus(thread.status)) {
      throw conflict(`thread ${thread.id} is ${thread.status}; a finished run does not continue`, nodeId);
    }
    const at = deps.env.now();
    const continued = continuedEvent(thread, at, nodeId, predecessor, executionId, step);
    try {
      await deps.threads.updateThread(thread.id, version, {
        set: {
          metadata: {
            ...metadata,
            executionId,
            firstExecutionId: metadata.firstExecutionId ?? predecessor,
            continuations: (metadata.continuations ?? 0) + 1,
            continuedAt: at,
          },
        },
        append: { events: [continued] },
      });
      return { at };
    } catch (error) {
      // Nothing else writes an idle root thread; reload and decide again all the same.
      if (
        !(error instanceof StepthreadError && error.code === 'VERSION_CONFLICT') ||
        attempt >= CLAIM_ATTEMPTS
      ) {
        throw error;
      }
    }
  }
}

export async function runResume(event: TaskEvent, deps: HandlerDeps): Promise<ResumedEnvelope> {
  const { envelope, resume, executionId } = event;
  // A copied thread's first execution (engine/asl/copy-start.ts) enters the same way.
  if (isCopyStart(resume)) return runCopyStart(event, resume, deps);
  if (resume === undefined || executionId === undefined) {
    throw new StepthreadError('INVALID_TASK_INPUT', 'a resume task needs executionId and resume', {
      nodeId: event.node.id,
    });
  }
  if (!isRootThread(envelope)) {
    throw conflict(
      `thread ${envelope.threadId} is a fork child; only a root thread continues`,
      resume.node.id,
    );
  }
  const predecessor = envelope.executionId;
  if (predecessor === executionId) {
    throw conflict(`execution ${executionId} cannot continue itself`, resume.node.id);
  }
  const { at } = await claim(event, executionId, deps);
  const { workflowId, workflowVersion, rootThreadId, threadId, step, route, loop, last, history } = envelope;
  await deps.executions.putExecution({
    executionId,
    rootThreadId,
    workflowId,
    workflowVersion,
    status: 'RUNNING',
    startTime: at,
    continuedFrom: predecessor,
    continuedFromStep: step,
    ...(history === undefined ? {} : { continuedFromHistory: history }),
  });
  try {
    await deps.executions.setExecutionStatus(predecessor, 'CONTINUED', {
      endTime: at,
      continuedAs: executionId,
    });
  } catch (error) {
    // A predecessor without a record (started before records existed) just is not linked forward.
    if (!(error instanceof StepthreadError && error.code === 'EXECUTION_NOT_FOUND')) throw error;
  }
  // After the commit; a retry publishes the same event again (at least once).
  const continued = continuedEvent(
    { id: threadId, workflowId },
    at,
    resume.node.id,
    predecessor,
    executionId,
    step,
  );
  await publishCommitted(deps.events, [continued], { executionId });
  // The same envelope as a step's, in the new execution, with this execution's history count.
  const { history: _history, ...rest } = envelope;
  const incoming = {
    ...rest,
    executionId,
    ...(event.historyEvents === undefined ? {} : { history: event.historyEvents }),
  };
  return {
    ...nextEnvelope(incoming, step, last, { route, loop }),
    resumeAt: resume.at,
  };
}
