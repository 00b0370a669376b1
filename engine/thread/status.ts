/** Thread status machine: which transitions are legal and the event each one records. */
import type { CodedError } from '../errors.ts';
import { StepthreadError } from '../errors.ts';
import { createEvent, type StepthreadEvent } from '../events.ts';
import type { EngineEnv, Thread, ThreadStatus } from './types.ts';

export const TERMINAL_STATUSES: ReadonlySet<ThreadStatus> = new Set<ThreadStatus>([
  'COMPLETED',
  'FAILED',
  'CANCELLED',
  'TIMEOUT',
]);

const ALLOWED: Readonly<Record<ThreadStatus, readonly ThreadStatus[]>> = {
  CREATED: ['RUNNING'],
  RUNNING: ['PAUSED', 'COMPLETED', 'FAILED', 'CANCELLED', 'TIMEOUT'],
  PAUSED: ['RUNNING', 'CANCELLED', 'TIMEOUT'],
  COMPLETED: [],
  FAILED: [],
  CANCELLED: [],
  TIMEOUT: [],
};

export function isTerminalStatus(status: ThreadStatus): boolean {
  return TERMINAL_STATUSES.has(status);
}

export function canTransition(from: ThreadStatus, to: ThreadStatus): boolean {
  return ALLOWED[from].includes(to);
}

export interface TransitionDetails {
  /** FAILED: the cause; appended to the thread's errors and carried by THREAD_FAILED. */
  error?: CodedError;
  /** PAUSED / CANCELLED: why (e.g. "waiting for user input"). */
  reason?: string;
}

export interface TransitionResult {
  thread: Thread;
  event: StepthreadEvent;
}

/**
 * Moves a thread to `to`, or throws INVALID_STATUS_TRANSITION (terminal statuses are final and
 * X→X is rejected, so a retried handler notices it already applied the change). Terminal statuses
 * set endTime. Returns a new thread object; nested data is shared with the input.
 */
export function transitionThread(
  thread: Thread,
  to: ThreadStatus,
  env: EngineEnv,
  details: TransitionDetails = {},
): TransitionResult {
  const from = thread.status;
  if (!canTransition(from, to)) {
    throw new StepthreadError(
      'INVALID_STATUS_TRANSITION',
      `thread ${thread.id} cannot go from ${from} to ${to}`,
    );
  }
  const at = env.now();
  const next: Thread = { ...thread, status: to };
  if (isTerminalStatus(to)) next.endTime = at;
  if (to === 'FAILED' && details.error) next.errors = [...thread.errors, details.error];
  const base = { threadId: thread.id, workflowId: thread.workflowId, at, from, to };
  return { thread: next, event: statusEvent(base, details) };
}

function statusEvent(
  base: { threadId: string; workflowId: string; at: string; from: ThreadStatus; to: ThreadStatus },
  details: TransitionDetails,
): StepthreadEvent {
  const reason = details.reason === undefined ? {} : { reason: details.reason };
  switch (base.to) {
    case 'RUNNING':
      return base.from === 'PAUSED'
        ? createEvent('THREAD_RESUMED', base)
        : createEvent('THREAD_STARTED', base);
    case 'PAUSED':
      return createEvent('THREAD_PAUSED', { ...base, ...reason });
    case 'COMPLETED':
      return createEvent('THREAD_COMPLETED', base);
    case 'FAILED':
      return createEvent('THREAD_FAILED', { ...base, ...(details.error ? { error: details.error } : {}) });
    case 'CANCELLED':
      return createEvent('THREAD_CANCELLED', { ...base, ...reason });
    case 'TIMEOUT':
      return createEvent('THREAD_TIMEOUT', base);
    case 'CREATED':
      // Unreachable: canTransition never allows a move into CREATED.
      throw new StepthreadError('INVALID_STATUS_TRANSITION', `no transition into CREATED`);
  }
}
