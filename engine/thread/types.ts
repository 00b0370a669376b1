/** Threads: one run (or fork branch, or copy) of a workflow, as plain serialisable data. */

import type { ConversationState } from '../conversation/types.ts';
import type { CodedError } from '../errors.ts';
import type { StepthreadEvent } from '../events.ts';
import type { NodeType } from '../model/schema.ts';

export const THREAD_STATUSES = [
  'CREATED',
  'RUNNING',
  'PAUSED',
  'COMPLETED',
  'FAILED',
  'CANCELLED',
  'TIMEOUT',
] as const;
export type ThreadStatus = (typeof THREAD_STATUSES)[number];

export type Variables = Record<string, unknown>;

/** The four variable scopes. Subgraph and loop scopes are stacks: innermost last. */
export interface VariableScopes {
  global: Variables;
  thread: Variables;
  subgraph: Variables[];
  loop: Variables[];
  /**
   * Names a VARIABLE node marked readonly at run time (declarations carry their own flag). Stacks
   * hold one list per frame so a frame's marks disappear when it is popped. Absent = none.
   */
  readonlyMarks?: ReadonlyMarks;
}

export interface ReadonlyMarks {
  global: string[];
  thread: string[];
  subgraph: string[][];
  loop: string[][];
}

/** Ids and time come from outside so engine results are deterministic and testable. */
export interface EngineEnv {
  /** Current time as an ISO-8601 string. */
  now(): string;
  /** A fresh unique id (thread ids, ...). */
  newId(): string;
}

export type NodeResultStatus = 'COMPLETED' | 'FAILED' | 'SKIPPED';

export interface NodeResult {
  nodeId: string;
  nodeType: NodeType;
  status: NodeResultStatus;
  output?: unknown;
  error?: CodedError;
  /** ISO timestamps. */
  startedAt: string;
  endedAt: string;
  attempt?: number;
  /**
   * What a CODE node's JavaScript printed (`console.*`), or the `code` tools a TOOL or LLM node
   * called (an LLM node's under a line per call naming the tool), capped; kept with the result in its
   * step record (events carry no values), stored by reference when large like any value.
   */
  logs?: NodeLogs;
  /**
   * An LLM node's tool calls in this run, and how many of them returned an error to the model (an
   * unknown tool, arguments that are no object, a tool that failed): the node completes either way.
   */
  toolCalls?: ToolCallCounts;
  /**
   * An LLM node's model calls in this step (the failed ones too: their tokens were spent), and their
   * cost at the profile's prices when the model has one (functions/llm/prices.ts).
   */
  usage?: ModelUsage;
}

export interface ModelUsage {
  modelCalls: number;
  inputTokens: number;
  outputTokens: number;
  /** US dollars; absent when the model has no price (not in the table, no `pricing` on its profile). */
  costUsd?: number;
}

export interface ToolCallCounts {
  calls: number;
  failed: number;
  /**
   * On a node whose tools may ask for approval (`requiresApproval`): how many questions this run of it
   * asked a person (each a wait of its own on AWS: the AWS cost estimate counts them, cli/aws-cost.ts).
   */
  approvals?: number;
}

/** A node's console output: the lines kept, and what the cap cut, when it cut anything. */
export interface NodeLogs {
  lines: string[];
  cut?: {
    /** Whole lines dropped after the cap was reached. */
    lines: number;
    /** Characters cut from the ends of lines that were kept. */
    chars: number;
  };
}

export interface ExecutionHistoryEntry {
  nodeId: string;
  nodeType: NodeType;
  status: NodeResultStatus;
  at: string;
  /** Step number in the run (1-based); bounded by the workflow's maxSteps. */
  step: number;
}

export interface ThreadMetadata {
  parentThreadId?: string;
  forkPathId?: string;
  /** Set on copies: the thread this one was copied from, and how many of its steps it holds. */
  copiedFrom?: string;
  copiedAtStep?: number;
  /**
   * Set on fork children: the threads whose node results this one reads after its own, nearest
   * first (the parent, then the parent's lineage). Results are never copied into a child.
   */
  lineage?: string[];
  /** The execution running this thread (a root thread moves to each successor when a run continues). */
  executionId?: string;
  /** A root thread whose execution input gave a W3C trace context: its run's trace parent (functions/telemetry). */
  traceparent?: string;
  /** Root threads of a run that continued: the run's first execution, and how often it continued. */
  firstExecutionId?: string;
  continuations?: number;
  /** When the current execution claimed the thread (the last continuation). */
  continuedAt?: string;
  /**
   * A root thread whose run has no budget: written with the head by the start that knows it (START, a
   * copy's start, a run from a node), kept by continuations, never copied. Its steps then read no
   * spend before a model call; absent, they read it (functions/nodes/run-budget.ts).
   */
  noBudget?: true;
  /**
   * A fork branch or list item whose path, once completed, ends at its report to the JOIN, with no
   * Choice after it (completedPathEndsAtReport): what the AWS cost estimate counts (cli/aws-cost.ts).
   */
  pathEndsAtReport?: true;
  [key: string]: unknown;
}

export interface ThreadContextData {
  forkPathId?: string;
  /** The path id as the author wrote it (graph build may make forkPathId globally unique). */
  authorForkPathId?: string;
  [key: string]: unknown;
}

export interface Thread {
  id: string;
  workflowId: string;
  workflowVersion: number;
  status: ThreadStatus;
  currentNodeId?: string;
  input: Variables;
  output?: unknown;
  variables: VariableScopes;
  /**
   * Latest result per node id (a node run again in a loop overwrites its entry). Stores keep these
   * apart from the thread and load only the ones a step reads, so this may hold a subset.
   */
  nodeResults: Record<string, NodeResult>;
  /** Stores keep history in per-step records (readJournal); a loaded thread's list may be empty. */
  executionHistory: ExecutionHistoryEntry[];
  errors: CodedError[];
  metadata: ThreadMetadata;
  contextData: ThreadContextData;
  conversation: ConversationState;
  /** ISO timestamps. */
  startTime: string;
  endTime?: string;
  /**
   * Node executions applied to this thread by the runtime (the idempotency key: a retried Task
   * whose envelope step is below this already landed). Absent = 0.
   */
  step?: number;
  /** The envelope the last applied node execution returned, replayed to a retry of it. */
  lastEnvelope?: Envelope;
  /**
   * Events recorded with the thread, oldest first. Stores keep a step's events in its step record
   * and those recorded outside steps (status changes, continuations) in items of their own
   * (readJournal has them all); the thread item holds only those it was created with.
   */
  events?: StepthreadEvent[];
  /**
   * On a root thread: the step of each fork child whose write to the global scope landed last (a
   * child's retry after a crash finds its write here and commits instead of writing again). Cleared
   * by the JOIN.
   */
  globalWriters?: Record<string, number>;
  /**
   * On a root thread: the joins (their bookkeeping keys) that decided most recently, newest last. A
   * branch of one of them writes no globals any more (a straggler finishing after the decision).
   */
  closedJoins?: string[];
}

/**
 * What flows between Step Functions states: references and small summaries only, never content
 * (conversations and variables stay in the stores), so it stays far below the 256 KiB limit.
 */
export interface Envelope {
  executionId: string;
  workflowId: string;
  workflowVersion: number;
  rootThreadId: string;
  /** The thread this state runs on (a fork child inside a branch). */
  threadId: string;
  /** Node executions already applied to threadId. */
  step: number;
  maxSteps: number;
  /** Set by ROUTE: the chosen target node id. */
  route?: string;
  /** Set by LOOP_START / LOOP_END. */
  loop?: { exit: boolean };
  /**
   * Set by FORK: child thread ids in forkPathIds order. A FORK over a list sets `children: []`,
   * `base`, `source` and `items` (each item's byte range in the source, what the Map state iterates):
   * item i runs on `<base>-<i>`; a distributed one `count` and `list` instead of `items`.
   */
  fork?: {
    children: string[];
    base?: string;
    items?: (readonly [number, number])[];
    /**
     * A FORK over a list: the object in the bucket holding what its item threads share (`template`,
     * a byte range) and each item; an item creates its own thread from it on its first step.
     */
    source?: { key: string; template: readonly [number, number] };
    /** Distributed: how many items, and the item list in S3 (ItemReader) and the results prefix. */
    count?: number;
    list?: { bucket: string; key: string; results: string };
    /** The FORK step's trace context, its branches' and items' trace parent (functions/telemetry). */
    traceparent?: string;
  };
  /**
   * Step Functions history events this execution has recorded by the time the state that received this
   * envelope (and the Choice after it) is done: an estimate, absent when the definition does not count
   * (no continue-as-new). A fork path counts its own from 0. See engine/asl/continuation.ts.
   */
  history?: number;
  last?: { nodeId: string; status: 'COMPLETED' | 'FAILED' };
  /**
   * An item of a FORK over a list, on its first step (the Map's ItemSelector sets it; the step's next
   * envelope drops it): where its thread's content is, so the step creates the thread if it is not
   * there yet (functions/nodes/map-items.ts).
   */
  item?: { at: readonly [number, number]; source: { key: string; template: readonly [number, number] } };
  /**
   * W3C trace context whose span is the parent of this thread's step spans (the run's span on the
   * root thread, the FORK step's on a branch): set only while tracing (functions/telemetry).
   */
  traceparent?: string;
}
