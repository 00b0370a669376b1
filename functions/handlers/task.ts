/**
 * What a Task state hands a node handler: `{ action, node, envelope }` (design: runtime-design.md).
 * `node` is static data baked into the ASL by the compiler, so a handler never loads the workflow.
 */

import type { ResumePoint } from '../../engine/asl/continuation.ts';
import type { CopyStartPoint } from '../../engine/asl/copy-start.ts';
import {
  ASL_ERRORS,
  type AslErrorOutput,
  type ExecutionInput,
  type IncomingEnvelope,
  TASK_ACTIONS,
  type TaskAction,
} from '../../engine/asl/task-input.ts';
import { type CodedError, StepthreadError } from '../../engine/errors.ts';
import type { EnclosingSubgraph } from '../../engine/lifecycle.ts';
import type {
  Budget,
  Hook,
  JoinConfig,
  NodeType,
  Profile,
  ToolDefinition,
  VariableDeclaration,
} from '../../engine/model/schema.ts';
import { NODE_TYPES } from '../../engine/model/schema.ts';

export type { AslErrorOutput, ExecutionInput, IncomingEnvelope, TaskAction };
export { TASK_ACTIONS };

/**
 * Static description of the node, as compiled into the Task's Parameters: the union of the fields
 * of engine/asl's NodeDescription variants (each node type checks the ones it needs), so the local
 * runtime and hand-written test inputs can pass plain objects.
 */
export interface TaskNode {
  id: string;
  type: NodeType;
  config?: unknown;
  hooks?: Hook[];
  /** The SUBGRAPHs the node's failure fails, with hooks to run then (engine/lifecycle.ts). */
  enclosingSubgraphs?: EnclosingSubgraph[];
  /** START: the workflow the run belongs to. */
  workflow?: {
    id: string;
    version: number;
    maxSteps?: number;
    /** What one run may spend (issue 27), before the run's own `budget` in the execution input. */
    budget?: Budget;
    variables?: VariableDeclaration[];
  };
  /** Declarations of the variables the node writes (VARIABLE, outputVariable, mappings). */
  variables?: VariableDeclaration[];
  /** LLM: its profile, without secrets. */
  profile?: Profile;
  /** LLM: definitions of the tools it may call. */
  tools?: Record<string, ToolDefinition>;
  /** FORK / JOIN: the author's path ids, parallel to config.forkPathIds. */
  authorForkPathIds?: string[];
  /** JOIN: how its FORK runs the branches (the bookkeeping behaves the same for both). */
  forkStrategy?: 'serial' | 'parallel';
  /** JOIN: its FORK iterates over a list (forEach). */
  overList?: boolean;
  /** FORK: its JOIN's id and config. JOIN: its FORK's id (part of the join bookkeeping key). */
  joinId?: string;
  joinConfig?: JoinConfig;
  forkId?: string;
  /**
   * JOIN: the branch nodes whose results it merges into the parent (those an expression reads);
   * absent: every result the branches kept.
   */
  branchResults?: string[];
  /** Join bookkeeping tasks: how many paths the join has (their config leaves the path lists out). */
  paths?: number;
  /** Join bookkeeping tasks of one path. */
  path?: { index: number; pathId: string; authorPathId: string };
  /** No expression reads this node's output: its latest result need not be kept apart (see the compiler). */
  resultUnread?: boolean;
  /** `{{nodes.<ref>}}` → the built node ids it reads (inside a subgraph, or a SUBGRAPH's output). */
  nodeAliases?: Record<string, string[]>;
  /** TOOL: the tool's definition. */
  tool?: ToolDefinition;
  /** CONTEXT_PROCESSOR clear in a workflow with tools: the tool-description message it keeps. */
  toolDescription?: string;
  /** Subgraph boundary nodes (type SUBGRAPH), and the SUBGRAPH node they open or close. */
  boundary?: 'ENTER' | 'EXIT';
  subgraphNodeId?: string;
}

export interface TaskEvent {
  action?: TaskAction;
  node: TaskNode;
  envelope: IncomingEnvelope;
  /**
   * A node's own Task, when the node is its fork path's last before the JOIN: the JOIN's bookkeeping
   * description; the step then finishes the path's thread and reports it (functions/nodes/branch-report.ts).
   */
  report?: TaskNode;
  /** START and `resume` only: `$$.Execution.Id`. */
  executionId?: string;
  /** USER_INTERACTION only: `$$.Task.Token` of its waitForTaskToken Task. */
  taskToken?: string;
  /** `resume` only: where the execution that continued stopped, or where a copy starts. */
  resume?: ResumePoint | CopyStartPoint;
  /** History events this Task state adds (continue-as-new); the dispatch counts them. */
  historyEvents?: number;
}

export interface StartTaskEvent {
  action?: 'execute';
  node: TaskNode;
  /** The execution input. */
  input?: ExecutionInput;
  executionId: string;
  historyEvents?: number;
}

export type AnyTaskEvent = TaskEvent | StartTaskEvent;

function invalid(message: string): StepthreadError {
  return new StepthreadError('INVALID_TASK_INPUT', message);
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Checks the parts every handler relies on; node configs are checked by each node type. */
export function parseTaskEvent(input: unknown): AnyTaskEvent {
  if (!isRecord(input)) throw invalid('the task input must be an object');
  const value = input;
  const { action, node, envelope } = value;
  if (action !== undefined && !(TASK_ACTIONS as readonly unknown[]).includes(action)) {
    throw invalid(`unknown action ${JSON.stringify(action)} (expected one of ${TASK_ACTIONS.join(', ')})`);
  }
  if (
    !isRecord(node) ||
    typeof node.id !== 'string' ||
    !(NODE_TYPES as readonly unknown[]).includes(node.type)
  ) {
    throw invalid('the task input needs a node with an id and a known type');
  }
  const { historyEvents } = value;
  if (historyEvents !== undefined && !(Number.isInteger(historyEvents) && (historyEvents as number) >= 0)) {
    throw invalid(`node ${node.id}: historyEvents must be a non-negative integer`);
  }
  if (node.type === 'START' && (action ?? 'execute') === 'execute') {
    if (typeof value.executionId !== 'string' || value.executionId === '') {
      throw invalid(`node ${node.id}: the START task needs executionId`);
    }
    if (value.input !== undefined && !isRecord(value.input)) {
      throw invalid(`node ${node.id}: the execution input must be an object`);
    }
    return value as unknown as StartTaskEvent;
  }
  if (!isRecord(envelope)) throw invalid(`node ${node.id}: the task input needs an envelope`);
  for (const field of ['executionId', 'workflowId', 'rootThreadId', 'threadId'] as const) {
    if (typeof envelope[field] !== 'string') throw invalid(`node ${node.id}: envelope.${field} is missing`);
  }
  for (const field of ['step', 'maxSteps', 'workflowVersion'] as const) {
    const n = envelope[field];
    if (typeof n !== 'number' || !Number.isInteger(n) || n < 0) {
      throw invalid(`node ${node.id}: envelope.${field} must be a non-negative integer`);
    }
  }
  const { report } = value;
  if (
    report !== undefined &&
    (!isRecord(report) || report.type !== 'JOIN' || typeof report.id !== 'string')
  ) {
    throw invalid(`node ${node.id}: report must name the JOIN the node's path reports to`);
  }
  if (action === 'resume') {
    const { resume, executionId } = value;
    if (typeof executionId !== 'string' || executionId === '') {
      throw invalid(`node ${node.id}: a resume task needs executionId`);
    }
    if (!isRecord(resume) || typeof resume.at !== 'string' || !isRecord(resume.node)) {
      throw invalid(`node ${node.id}: a resume task needs resume.at and resume.node`);
    }
  }
  return value as unknown as TaskEvent;
}

/** Error names the ASL's Retry and Catch match on (shared with the compiler). */
export const TASK_ERROR_NAMES = ASL_ERRORS;
export type TaskErrorName = Exclude<
  (typeof ASL_ERRORS)[keyof typeof ASL_ERRORS],
  typeof ASL_ERRORS.noRoute | typeof ASL_ERRORS.noResumePoint
>;

/** An error a Task reports to Step Functions; `name` is the ASL error name. */
export class TaskError extends Error {
  constructor(name: TaskErrorName, message: string, options: { cause?: unknown } = {}) {
    super(message, { cause: options.cause });
    this.name = name;
  }
}

/** The node failed (recorded on the thread first); the message is the coded error as JSON. */
export function nodeFailed(error: CodedError): TaskError {
  return new TaskError(TASK_ERROR_NAMES.nodeFailed, JSON.stringify(error));
}

/**
 * The coded error inside a Catch's error output. Step Functions wraps a Lambda error's message
 * in `{"errorMessage": ...}`; the local runner passes it as is.
 */
export function codedErrorFromAsl(error: AslErrorOutput | undefined, nodeId?: string): CodedError {
  const fallback: CodedError = {
    code: 'NODE_EXECUTION_FAILED',
    message: error ? `${error.Error}${error.Cause ? `: ${error.Cause}` : ''}` : 'unknown failure',
    ...(nodeId === undefined ? {} : { nodeId }),
  };
  const parse = (text: unknown): unknown => {
    if (typeof text !== 'string') return undefined;
    try {
      return JSON.parse(text);
    } catch {
      return undefined;
    }
  };
  let parsed = parse(error?.Cause);
  if (isRecord(parsed) && typeof parsed.errorMessage === 'string') parsed = parse(parsed.errorMessage);
  if (isRecord(parsed) && typeof parsed.code === 'string' && typeof parsed.message === 'string') {
    return parsed as unknown as CodedError;
  }
  return fallback;
}
