/**
 * Thread and node events: recorded with the thread and published to EventBridge.
 *
 * Payloads carry ids, counts, statuses and coded errors only — never message bodies, variable
 * values or prompts — because consumers outside the account boundary may read them. The one
 * exception is a hook's payload, which the workflow author wrote for exactly that purpose.
 */
import type { CodedError } from './errors.ts';
import type {
  ContextOperation,
  Hook,
  JoinStrategy,
  NodeType,
  UserInteractionType,
  VariableScope,
} from './model/schema.ts';
import type { ThreadStatus } from './thread/types.ts';

type HookType = Hook['hookType'];

export const EVENT_TYPES = [
  'THREAD_CREATED',
  'THREAD_STARTED',
  'THREAD_PAUSED',
  'THREAD_RESUMED',
  'THREAD_COMPLETED',
  'THREAD_FAILED',
  'THREAD_CANCELLED',
  'THREAD_TIMEOUT',
  'THREAD_FORKED',
  'THREAD_JOINED',
  'THREAD_COPIED',
  'THREAD_CONTINUED',
  'NODE_STARTED',
  'NODE_COMPLETED',
  'NODE_FAILED',
  'USER_INTERACTION_REQUESTED',
  'USER_INTERACTION_RESPONDED',
  'TOKEN_LIMIT_WARNING',
  'TOKEN_LIMIT_EXCEEDED',
  'BUDGET_WARNING',
  'CONTEXT_PROCESSED',
  'VARIABLE_CHANGED',
  'HOOK_TRIGGERED',
  'HOOK_FAILED',
] as const;
export type StepthreadEventType = (typeof EVENT_TYPES)[number];

/** Fields every event has. `at` is an ISO timestamp from the injected clock. */
export interface EventBase {
  threadId: string;
  workflowId: string;
  at: string;
}

interface NodeEventBase extends EventBase {
  nodeId: string;
}

/** A status change of a thread (see engine/thread/status.ts). */
interface StatusEventBase extends EventBase {
  from: ThreadStatus;
  to: ThreadStatus;
}

export interface ThreadCreatedEvent extends EventBase {
  type: 'THREAD_CREATED';
  workflowVersion: number;
}
export interface ThreadStartedEvent extends StatusEventBase {
  type: 'THREAD_STARTED';
}
export interface ThreadPausedEvent extends StatusEventBase {
  type: 'THREAD_PAUSED';
  reason?: string;
}
export interface ThreadResumedEvent extends StatusEventBase {
  type: 'THREAD_RESUMED';
}
export interface ThreadCompletedEvent extends StatusEventBase {
  type: 'THREAD_COMPLETED';
}
export interface ThreadFailedEvent extends StatusEventBase {
  type: 'THREAD_FAILED';
  error?: CodedError;
}
export interface ThreadCancelledEvent extends StatusEventBase {
  type: 'THREAD_CANCELLED';
  reason?: string;
}
export interface ThreadTimeoutEvent extends StatusEventBase {
  type: 'THREAD_TIMEOUT';
}
export interface ThreadForkedEvent extends EventBase {
  type: 'THREAD_FORKED';
  /** The FORK node, when known. */
  nodeId?: string;
  forkPathIds: string[];
  childThreadIds: string[];
}
export interface ThreadJoinedEvent extends EventBase {
  type: 'THREAD_JOINED';
  nodeId?: string;
  strategy: JoinStrategy;
  status: 'COMPLETED' | 'FAILED' | 'TIMEOUT';
  reason: string;
  /** The joined children; empty for a join over a list, whose event names the list instead (`items`). */
  childThreadIds: string[];
  /** A join over a list: how many items it had (its record stays the same size for any number). */
  items?: number;
  /** The path whose conversation was restored into the parent (successful joins only). */
  mainPathId?: string;
  /** The thread whose conversation was restored (a list join's `mainItem`). */
  mainThreadId?: string;
}
export interface ThreadCopiedEvent extends EventBase {
  type: 'THREAD_COPIED';
  /** threadId is the copy's id; both are spelled out for consumers that filter on either. */
  sourceThreadId: string;
  copyThreadId: string;
}
/** A root thread moved to a successor execution (continue-as-new), at a ROUTE or LOOP_END. */
export interface ThreadContinuedEvent extends EventBase {
  type: 'THREAD_CONTINUED';
  /** The ROUTE or LOOP_END whose Choice continued. */
  nodeId: string;
  fromExecutionId: string;
  toExecutionId: string;
  /** Node executions the thread had when it continued. */
  step: number;
}
export interface NodeStartedEvent extends NodeEventBase {
  type: 'NODE_STARTED';
  nodeType: NodeType;
  attempt?: number;
}
export interface NodeCompletedEvent extends NodeEventBase {
  type: 'NODE_COMPLETED';
  nodeType: NodeType;
  status: 'COMPLETED' | 'SKIPPED';
}
export interface NodeFailedEvent extends NodeEventBase {
  type: 'NODE_FAILED';
  nodeType: NodeType;
  error: CodedError;
}
export interface UserInteractionRequestedEvent extends NodeEventBase {
  type: 'USER_INTERACTION_REQUESTED';
  interactionType: UserInteractionType;
  optionCount?: number;
  timeoutSeconds?: number;
}
export interface UserInteractionRespondedEvent extends NodeEventBase {
  type: 'USER_INTERACTION_RESPONDED';
  interactionType: UserInteractionType;
}
interface TokenEventBase extends EventBase {
  nodeId?: string;
  totalTokens: number;
  limit: number;
}
export interface TokenLimitWarningEvent extends TokenEventBase {
  type: 'TOKEN_LIMIT_WARNING';
}
export interface TokenLimitExceededEvent extends TokenEventBase {
  type: 'TOKEN_LIMIT_EXCEEDED';
}
/** A run's spend reached 80% of one of its budget's limits (once per limit, raised by the step that did). */
export interface BudgetWarningEvent extends NodeEventBase {
  type: 'BUDGET_WARNING';
  budget: 'maxTokens' | 'maxCostUsd' | 'maxToolCalls';
  spent: number;
  limit: number;
}
export interface ContextProcessedEvent extends NodeEventBase {
  type: 'CONTEXT_PROCESSED';
  operation: ContextOperation;
  visibleCount: number;
}
export interface VariableChangedEvent extends EventBase {
  type: 'VARIABLE_CHANGED';
  nodeId?: string;
  name: string;
  scope: VariableScope;
}
export interface HookTriggeredEvent extends NodeEventBase {
  type: 'HOOK_TRIGGERED';
  hookType: HookType;
  eventName: string;
  payload: unknown;
}
export interface HookFailedEvent extends NodeEventBase {
  type: 'HOOK_FAILED';
  hookType: HookType;
  eventName: string;
  error: CodedError;
}

export type StepthreadEvent =
  | ThreadCreatedEvent
  | ThreadStartedEvent
  | ThreadPausedEvent
  | ThreadResumedEvent
  | ThreadCompletedEvent
  | ThreadFailedEvent
  | ThreadCancelledEvent
  | ThreadTimeoutEvent
  | ThreadForkedEvent
  | ThreadJoinedEvent
  | ThreadCopiedEvent
  | ThreadContinuedEvent
  | NodeStartedEvent
  | NodeCompletedEvent
  | NodeFailedEvent
  | UserInteractionRequestedEvent
  | UserInteractionRespondedEvent
  | TokenLimitWarningEvent
  | TokenLimitExceededEvent
  | BudgetWarningEvent
  | ContextProcessedEvent
  | VariableChangedEvent
  | HookTriggeredEvent
  | HookFailedEvent;

export type EventOf<T extends StepthreadEventType> = Extract<StepthreadEvent, { type: T }>;
/** What a caller supplies to build an event of type T: everything but the discriminant. */
export type EventFields<T extends StepthreadEventType> = Omit<EventOf<T>, 'type'>;

/** Builds a typed event; the compiler checks the payload against the type. */
export function createEvent<T extends StepthreadEventType>(type: T, fields: EventFields<T>): EventOf<T> {
  return { type, ...fields } as EventOf<T>;
}

const eventTypeSet: ReadonlySet<string> = new Set(EVENT_TYPES);

/** Narrows unknown data (e.g. read back from storage) to an event by its discriminant and base fields. */
export function isStepthreadEvent(value: unknown): value is StepthreadEvent {
  if (typeof value !== 'object' || value === null) return false;
  const v = value as Record<string, unknown>;
  return (
    typeof v.type === 'string' &&
    eventTypeSet.has(v.type) &&
    typeof v.threadId === 'string' &&
    typeof v.workflowId === 'string' &&
    typeof v.at === 'string'
  );
}
