/**
 * Cancelling a run (`stepthread cancel`, dev's Stop): the run's cancel mark first (marks.ts: what the
 * waits in flight look for), then whatever stops its execution (the local runtime's abort in this
 * process, StopExecution on AWS), then its records: every thread of the execution still under way
 * — the root first, then fork children and list items — moves to CANCELLED with a THREAD_CANCELLED
 * event carrying the reason, its open questions are closed, and the execution is recorded CANCELLED.
 *
 * Each thread moves by one update conditional on the version it was read at, as a step commits: a step
 * in flight either committed before (the thread is then cancelled after it) or finds its thread moved
 * on and leaves no trace. The records part is idempotent, so the local runtime runs it again once its
 * handlers have settled (a question recorded, or a child created, by a step that was in flight then).
 */
import { StepthreadError } from '../../engine/errors.ts';
import type { StepthreadEvent } from '../../engine/events.ts';
import { isTerminalStatus, transitionThread } from '../../engine/thread/index.ts';
import type { EngineEnv, Thread, ThreadStatus } from '../../engine/thread/types.ts';
import { type EventPublisher, publishCommitted } from '../events/publisher.ts';
import type { ExecutionIndex, ExecutionRecord } from '../stores/execution-index.ts';
import type { InteractionStore } from '../stores/interaction-store.ts';
import type { ThreadStore, VersionedThread } from '../stores/thread-store.ts';
import { traceCancelledRun } from '../telemetry/index.ts';
import type { CancelMark, CancelMarks } from './marks.ts';

export interface CancelStores {
  readonly threads: ThreadStore;
  readonly executions: ExecutionIndex;
  readonly interactions?: InteractionStore;
  readonly marks: CancelMarks;
  /** Where the THREAD_CANCELLED events are published (default: recorded on the threads only). */
  readonly events?: EventPublisher;
}

/** The run a reference names: its root thread and the execution running it now. */
export interface RunToCancel {
  readonly root: VersionedThread;
  /** The root's current execution (a run that continued: its latest). */
  readonly executionId: string;
}

export interface CancelOutcome {
  readonly executionId: string;
  readonly rootThreadId: string;
  /** The root thread's status after the cancel: CANCELLED, or how the run had ended before it. */
  readonly status: ThreadStatus;
  /** The run had ended before (COMPLETED, FAILED, TIMEOUT): nothing was cancelled. */
  readonly alreadyEnded: boolean;
  /** Cancelled by an earlier cancel: its mark (and reason) stays. */
  readonly alreadyCancelled: boolean;
  readonly reason?: string;
  /** Threads moved to CANCELLED by this call. */
  readonly threadsCancelled: number;
  /** Open questions this call closed. */
  readonly interactionsClosed: number;
}

export interface CancelOptions {
  readonly reason?: string;
  readonly env: EngineEnv;
  /** Stops the execution where it runs: the local runtime's in-process abort, StopExecution on AWS. */
  readonly stop?: (mark: CancelMark) => Promise<void> | void;
}

/** What the THREAD_CANCELLED events and closed questions say without a reason. */
const DEFAULT_REASON = 'the run was cancelled';

async function executionOrUndefined(
  executions: ExecutionIndex,
  executionId: string,
): Promise<ExecutionRecord | undefined> {
  try {
    return await executions.getExecution(executionId);
  } catch (error) {
    if (error instanceof StepthreadError && error.code === 'EXECUTION_NOT_FOUND') return undefined;
    throw error;
  }
}

/**
 * The run an execution id (any of a continued run's) or a thread id (its root, a fork child, a list
 * item) names. EXECUTION_NOT_FOUND when it names neither, or a copy that never ran.
 */
export async function runToCancel(
  stores: Pick<CancelStores, 'threads' | 'executions'>,
  ref: string,
): Promise<RunToCancel> {
  let execution = await executionOrUndefined(stores.executions, ref);
  if (execution === undefined) {
    const thread = await stores.threads.getThread(ref).catch((error: unknown) => {
      if (error instanceof StepthreadError && error.code === 'THREAD_NOT_FOUND') {
        throw new StepthreadError('EXECUTION_NOT_FOUND', `no execution or thread ${ref}`);
      }
      throw error;
    });
    const { executionId, copiedFrom } = thread.thread.metadata;
    execution =
      executionId === undefined ? undefined : await executionOrUndefined(stores.executions, executionId);
    // A copy keeps its source's execution id until it runs: it is no part of that run.
    const ownRun = execution?.rootThreadId === ref || copiedFrom === undefined;
    if (execution === undefined || !ownRun) {
      throw new StepthreadError(
        'EXECUTION_NOT_FOUND',
        `thread ${ref} has not run (a copy, or a thread never started): there is no run to cancel`,
      );
    }
  }
  const root = await stores.threads.getThread(execution.rootThreadId);
  return { root, executionId: root.thread.metadata.executionId ?? execution.executionId };
}

/** Cancels the run `ref` names: mark, stop, records (see the module comment). */
export async function cancelRun(
  stores: CancelStores,
  ref: string,
  options: CancelOptions,
): Promise<CancelOutcome> {
  const { root, executionId } = await runToCancel(stores, ref);
  const rootThreadId = root.thread.id;
  const base = { executionId, rootThreadId };
  const earlier = await stores.marks.get(rootThreadId, { consistent: true });
  if (isTerminalStatus(root.thread.status) && root.thread.status !== 'CANCELLED') {
    return { ...base, status: root.thread.status, ...unchanged(false), ...reasonOf(earlier) };
  }
  const mark = await stores.marks.put({
    rootThreadId,
    executionId,
    at: options.env.now(),
    ...(options.reason === undefined ? {} : { reason: options.reason }),
  });
  await options.stop?.(mark);
  const records = await cancelRunRecords(stores, mark, options.env);
  const alreadyCancelled = earlier !== undefined || root.thread.status === 'CANCELLED';
  if (!alreadyCancelled && records.status === 'CANCELLED') {
    await traceCancelledRun(
      {
        executionId,
        rootThreadId,
        workflowId: root.thread.workflowId,
        ...(mark.reason === undefined ? {} : { reason: mark.reason }),
      },
      stores.threads,
    );
  }
  return { ...base, ...records, alreadyCancelled, ...reasonOf(mark) };
}

function unchanged(alreadyCancelled: boolean) {
  return { alreadyEnded: !alreadyCancelled, alreadyCancelled, threadsCancelled: 0, interactionsClosed: 0 };
}

function reasonOf(mark: CancelMark | undefined): { reason?: string } {
  return mark?.reason === undefined ? {} : { reason: mark.reason };
}

/**
 * The records of a cancelled run (its mark says which and why): its threads CANCELLED, root first,
 * its open questions closed, its execution CANCELLED. A run that ended otherwise first (its END
 * committed before the root could be cancelled) keeps that ending.
 */
export async function cancelRunRecords(
  stores: CancelStores,
  mark: CancelMark,
  env: EngineEnv,
): Promise<Pick<CancelOutcome, 'status' | 'alreadyEnded' | 'threadsCancelled' | 'interactionsClosed'>> {
  const reason = mark.reason ?? DEFAULT_REASON;
  const rootEnd = await cancelThread(stores, await stores.threads.getThread(mark.rootThreadId), reason, env);
  if (rootEnd.status !== 'CANCELLED') return { status: rootEnd.status, ...unchanged(false) };
  let threadsCancelled = rootEnd.cancelled ? 1 : 0;
  const cancelledIds = [mark.rootThreadId];
  const threads = await stores.threads.listThreadsOfExecution(mark.executionId);
  for (const entry of threads) {
    const { thread } = entry;
    // Copies made from the run's threads are listed with it until they run: they are not its own.
    if (thread.id === mark.rootThreadId || thread.metadata.copiedFrom !== undefined) continue;
    if (isTerminalStatus(thread.status)) continue;
    const ended = await cancelThread(stores, entry, reason, env);
    if (ended.cancelled) {
      threadsCancelled += 1;
      cancelledIds.push(thread.id);
    }
  }
  const interactionsClosed = await closeQuestions(stores, mark, cancelledIds, reason, env);
  const endTime = env.now();
  try {
    await stores.executions.setExecutionStatus(mark.executionId, 'CANCELLED', {
      endTime,
      fromStatus: 'RUNNING',
    });
  } catch (error) {
    // Recorded CANCELLED already (a cancel run twice, the runtime after the command), or never recorded.
    const known =
      error instanceof StepthreadError && ['VERSION_CONFLICT', 'EXECUTION_NOT_FOUND'].includes(error.code);
    if (!known) throw error;
  }
  return { status: 'CANCELLED', alreadyEnded: false, threadsCancelled, interactionsClosed };
}

/** How a thread ended: `cancelled` when this call moved it to CANCELLED. */
interface ThreadEnd {
  readonly status: ThreadStatus;
  readonly cancelled: boolean;
}

/** How often a thread that keeps changing (its steps committing) is read again before giving up. */
const CANCEL_ATTEMPTS = 20;

/** Moves one thread to CANCELLED unless it ended already; a step committing meanwhile is waited out. */
async function cancelThread(
  stores: CancelStores,
  entry: VersionedThread,
  reason: string,
  env: EngineEnv,
): Promise<ThreadEnd> {
  let current: VersionedThread | undefined = entry;
  for (let attempt = 0; attempt < CANCEL_ATTEMPTS; attempt += 1) {
    current ??= await stores.threads.getThread(entry.thread.id);
    const { thread, version } = current;
    if (isTerminalStatus(thread.status)) return { status: thread.status, cancelled: false };
    const { events, ended } = cancelledThread(thread, reason, env);
    try {
      await stores.threads.updateThread(thread.id, version, {
        set: { status: 'CANCELLED', ...(ended.endTime ? { endTime: ended.endTime } : {}) },
        append: { events },
      });
      await publishCommitted(stores.events, events, { executionId: String(thread.metadata.executionId) });
      return { status: 'CANCELLED', cancelled: true };
    } catch (error) {
      if (!(error instanceof StepthreadError && error.code === 'VERSION_CONFLICT')) throw error;
      current = undefined;
    }
  }
  throw new StepthreadError('VERSION_CONFLICT', `thread ${entry.thread.id} kept changing; cancel it again`);
}

/** The thread CANCELLED (a thread not started yet starts first, as the status machine asks). */
function cancelledThread(
  thread: Thread,
  reason: string,
  env: EngineEnv,
): { events: StepthreadEvent[]; ended: Thread } {
  const events: StepthreadEvent[] = [];
  let next = thread;
  if (next.status === 'CREATED') {
    const started = transitionThread(next, 'RUNNING', env);
    next = started.thread;
    events.push(started.event);
  }
  const cancelled = transitionThread(next, 'CANCELLED', env, { reason });
  events.push(cancelled.event);
  return { events, ended: cancelled.thread };
}

/** Closes the questions the run still waits on: nobody can answer them any more. */
async function closeQuestions(
  stores: CancelStores,
  mark: CancelMark,
  threadIds: readonly string[],
  reason: string,
  env: EngineEnv,
): Promise<number> {
  const { interactions } = stores;
  if (interactions === undefined) return 0;
  const perThread = await Promise.all(threadIds.map((id) => interactions.listOpenOfThread(id)));
  const open = new Map(
    [...perThread.flat(), ...(await interactions.listOpenOfExecution(mark.executionId))].map(
      (interaction) => [interaction.interactionId, interaction],
    ),
  );
  const resolution = { outcome: 'FAILED', code: 'RUN_CANCELLED', reason } as const;
  let closed = 0;
  for (const interaction of open.values()) {
    if (await interactions.close(interaction, resolution, env.now())) closed += 1;
  }
  return closed;
}
