/**
 * The `fail` action: a Catch routed a failure here. Marks the thread FAILED with the caught error
 * (and the execution, for the root). Idempotent by status: a thread already finished is left as is.
 */

import type { CodedError } from '../../engine/errors.ts';
import { isTerminalStatus, transitionThread } from '../../engine/thread/index.ts';
import type { Thread } from '../../engine/thread/types.ts';
import { type PublishContext, publishCommitted } from '../events/publisher.ts';
import type { HandlerDeps } from '../handlers/deps.ts';
import { isRootThread, loadThread } from '../handlers/pipeline.ts';
import { codedErrorFromAsl, type IncomingEnvelope, type TaskEvent } from '../handlers/task.ts';
import { expireEndedRun } from './run-expiry.ts';

function sameError(a: CodedError | undefined, b: CodedError): boolean {
  return a !== undefined && a.code === b.code && a.message === b.message && a.nodeId === b.nodeId;
}

/**
 * Moves `thread` (at `version`) to FAILED unless it already finished; returns the status it ends in.
 * The failing node already recorded its error, so it is not appended twice.
 */
export async function markThreadFailed(
  deps: HandlerDeps,
  thread: Thread,
  version: number,
  error: CodedError,
  context: PublishContext = {},
): Promise<Thread> {
  if (isTerminalStatus(thread.status)) return thread;
  let current = thread;
  const events = [];
  if (current.status === 'CREATED') {
    const started = transitionThread(current, 'RUNNING', deps.env);
    current = started.thread;
    events.push(started.event);
  }
  const failed = transitionThread(current, 'FAILED', deps.env, { error });
  events.push(failed.event);
  const recorded = sameError(thread.errors.at(-1), error);
  await deps.threads.updateThread(thread.id, version, {
    set: { status: 'FAILED', ...(failed.thread.endTime ? { endTime: failed.thread.endTime } : {}) },
    append: { events, ...(recorded ? {} : { errors: [error] }) },
  });
  await publishCommitted(deps.events, events, context);
  return { ...failed.thread, errors: recorded ? thread.errors : [...thread.errors, error] };
}

/**
 * Ends a run FAILED with `error`: its root thread (at `version`) and its execution, unless the thread
 * finished already. Returns the thread as it ends.
 */
export async function failRun(
  deps: HandlerDeps,
  root: { thread: Thread; version: number },
  error: CodedError,
  executionId: string,
): Promise<Thread> {
  const after = await markThreadFailed(deps, root.thread, root.version, error, { executionId });
  if (after.status === 'FAILED') {
    await deps.executions.setExecutionStatus(executionId, 'FAILED', {
      ...(after.endTime ? { endTime: after.endTime } : {}),
    });
    await expireEndedRun(deps, { executionId, rootThreadId: after.id, endTime: after.endTime });
  }
  return after;
}

export async function runFail(event: TaskEvent, deps: HandlerDeps): Promise<IncomingEnvelope> {
  const { envelope } = event;
  const { thread, version } = await loadThread(deps, envelope);
  const error = codedErrorFromAsl(envelope.error, envelope.last?.nodeId);
  if (isRootThread(envelope)) await failRun(deps, { thread, version }, error, envelope.executionId);
  else await markThreadFailed(deps, thread, version, error, { executionId: envelope.executionId });
  // The Fail state after this task reads the error from `$.error`.
  return envelope;
}
