/** Threads: one run (or fork branch, or copy) of a workflow, as plain serialisable data. */

import type { ConversationState } from '../conversation/types.ts';
import type { CodedError } from '../errors.ts';
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
  /** Set on copies: the thread this one was copied from. */
  copiedFrom?: string;
  executionId?: string;
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
  /** Latest result per node id (a node run again in a loop overwrites its entry). */
  nodeResults: Record<string, NodeResult>;
  executionHistory: ExecutionHistoryEntry[];
  errors: CodedError[];
  metadata: ThreadMetadata;
  contextData: ThreadContextData;
  conversation: ConversationState;
  /** ISO timestamps. */
  startTime: string;
  endTime?: string;
}
