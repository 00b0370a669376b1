/**
 * What each Task state hands its Lambda: `{ action, node, envelope }` (runtime-design.md). A node's own
 * Tasks name it as `{ id, ref }`, its description in the compiled node table `ref` (node-table.ts), which
 * the dispatch puts in its place before a handler runs; join bookkeeping, `fail` and `resume` carry their
 * small, constant-size descriptions inline. Either way a handler never loads the workflow file; these
 * types are the contract between engine/asl and functions/handlers.
 */
import type { EnclosingSubgraph } from '../lifecycle.ts';
import type {
  Budget,
  CodeConfig,
  ContextProcessorConfig,
  ForkConfig,
  Hook,
  JoinConfig,
  LlmConfig,
  LoopEndConfig,
  LoopStartConfig,
  NodeType,
  Profile,
  RouteConfig,
  ToolDefinition,
  ToolNodeConfig,
  UserInteractionConfig,
  VariableConfig,
  VariableDeclaration,
} from '../model/schema.ts';
import type { Envelope } from '../thread/types.ts';
import type { ResumePoint } from './continuation.ts';
import type { CopyStartPoint } from './copy-start.ts';
import type { NodeRef } from './node-table.ts';

/**
 * `execute` runs the node; `answer` commits a USER_INTERACTION's answer after its waitForTaskToken
 * Task; `approval` asks for a person's approval of an LLM node's tool call (its waitForTaskToken Task); `resume` (START's function) claims the thread for an execution that continues a run; the others
 * are fork/join and failure bookkeeping.
 */
export const TASK_ACTIONS = [
  'execute',
  'answer',
  'approval',
  'fail',
  'branch-done',
  'branch-failed',
  'timeout',
  'resume',
] as const;
export type TaskAction = (typeof TASK_ACTIONS)[number];

/**
 * Set in the JOIN function's result when a path's report (`branch-done`, `branch-failed`) decided the
 * join: the Choice after the report sends the path to a Fail state raising JoinDecided, which stops
 * the enclosing Parallel or Map. Its value says why the join decided.
 */
export const JOIN_DECIDED_KEY = 'joinDecided';

/** Error names the definition's Retry and Catch match on; handlers throw errors with these names. */
export const ASL_ERRORS = {
  nodeFailed: 'stepthread.NodeFailed',
  transient: 'stepthread.Transient',
  joinDecided: 'stepthread.JoinDecided',
  joinTimeout: 'stepthread.JoinTimeout',
  /** Raised by the definition itself when a ROUTE chose no target and has no default. */
  noRoute: 'stepthread.NoRoute',
  /** Raised by the definition itself when a resumed execution names no continuation point of it. */
  noResumePoint: 'stepthread.NoResumePoint',
} as const;

interface Described {
  id: string;
  /** The id in the node's own workflow file, when a subgraph prefix made `id` differ. */
  authorId?: string;
  hooks?: Hook[];
  /**
   * True when no expression in the workflow reads this node's output (`{{nodes.<id>}}`), so the
   * runtime need not keep it as the node's latest result (its step record still holds it).
   */
  resultUnread?: true;
  /**
   * `{{nodes.<ref>}}` references this node makes that name other built ids: a child node's inside a
   * subgraph (`acc` → `sub.acc`), a SUBGRAPH's output (`sub` → its EXIT nodes). Absent when none.
   */
  nodeAliases?: Record<string, string[]>;
  /**
   * The SUBGRAPHs this node's failure fails, innermost first — those it sits in, after the one a
   * boundary node opens or closes — with their AFTER_EXECUTE hooks where the failure must run them
   * (their EXIT, where these hooks otherwise run, is then never reached). Absent outside subgraphs.
   */
  enclosingSubgraphs?: EnclosingSubgraph[];
}

/**
 * Declarations of the variables a node writes (VARIABLE's variableName, an outputVariable, the parent
 * variables of a subgraph's outputMapping), looked up from the node's level outwards; absent when none
 * is declared.
 */
interface WritesVariables {
  variables?: VariableDeclaration[];
}

export interface StartDescription extends Described {
  type: 'START';
  workflow: {
    id: string;
    version: number;
    maxSteps: number;
    budget?: Budget;
    variables: VariableDeclaration[];
  };
}

export interface EndDescription extends Described {
  type: 'END';
  config: { output?: unknown };
}

export interface VariableDescription extends Described, WritesVariables {
  type: 'VARIABLE';
  config: VariableConfig;
}

export interface CodeDescription extends Described, WritesVariables {
  type: 'CODE';
  config: CodeConfig;
}

export interface LlmDescription extends Described, WritesVariables {
  type: 'LLM';
  /** profileId is resolved (never absent) and, like tools, names what `profile` / `tools` hold. */
  config: LlmConfig & { profileId: string };
  /** The resolved profile; a scripted profile's byNode keeps only this node's entries. */
  profile: Profile;
  /** Definitions of config.tools, keyed as config.tools names them. */
  tools?: Record<string, ToolDefinition>;
}

export interface ToolDescription extends Described, WritesVariables {
  type: 'TOOL';
  config: ToolNodeConfig;
  tool: ToolDefinition;
}

export interface UserInteractionDescription extends Described, WritesVariables {
  type: 'USER_INTERACTION';
  config: UserInteractionConfig;
}

export interface ContextProcessorDescription extends Described {
  type: 'CONTEXT_PROCESSOR';
  config: ContextProcessorConfig;
  /** clear, in a workflow that declares tools: the tool-description message it keeps (seed 004 §4). */
  toolDescription?: string;
}

/** Route targets are node ids: the handler sets `envelope.route` to one of them (or leaves it unset). */
export interface RouteDescription extends Described {
  type: 'ROUTE';
  config: RouteConfig;
}

/** loopId is global (prefixed inside subgraphs); the handler enforces maxIterations. */
export interface LoopStartDescription extends Described {
  type: 'LOOP_START';
  config: LoopStartConfig;
  /** The loop-scope declarations of the loop's level: each iteration's scope starts with their initials. */
  variables?: VariableDeclaration[];
}

export interface LoopEndDescription extends Described {
  type: 'LOOP_END';
  config: LoopEndConfig;
}

/** config.forkPathIds are global path ids; childNodeIds are the branch entry node ids. */
export interface ForkDescription extends Described {
  type: 'FORK';
  config: ForkConfig;
  authorForkPathIds: string[];
  joinId: string;
  /** The paired JOIN's config (global path ids, mainPathId set). */
  joinConfig: JoinConfig & { mainPathId: string };
}

/** config.forkPathIds and mainPathId are global path ids. */
export interface JoinDescription extends Described {
  type: 'JOIN';
  config: JoinConfig & { mainPathId: string };
  authorForkPathIds: string[];
  authorMainPathId: string;
  forkId: string;
  forkStrategy: 'serial' | 'parallel';
  /** The FORK iterates over a list (forEach): the join counts items, not paths. */
  overList?: true;
  /**
   * The branch nodes (nested regions included) whose output some expression reads: the only results
   * the JOIN loads from its branches and merges into the parent. Absent when the workflow reads
   * outputs it cannot name statically (`nodes` as a whole): then every result the branches kept.
   */
  branchResults?: string[];
}

/**
 * What a join's bookkeeping tasks need to decide: the JOIN's config without its path lists (`paths` is
 * how many there are). Each path's tasks carry it, so it must not grow with the fork's width: with the
 * lists, a 150-path fork's definition grew with the square of its width (1.12 MB).
 */
export interface JoinBookkeepingDescription {
  id: string;
  authorId?: string;
  type: 'JOIN';
  config: Omit<JoinConfig, 'forkPathIds'> & { mainPathId: string };
  /** The number of paths (config.forkPathIds.length of the JOIN). */
  paths: number;
  forkId: string;
  forkStrategy: 'serial' | 'parallel';
  /** The FORK iterates over a list (forEach): the join counts items, not paths. */
  overList?: true;
}

/** `<join>:<path>` (branch-done) and `<join>:<path>:failed` (branch-failed): one path reports to its join. */
export interface JoinBranchDescription extends JoinBookkeepingDescription {
  path: { index: number; pathId: string; authorPathId: string };
}

/** `<join>:timeout`: the join's timer ran out. */
export type JoinTimeoutDescription = JoinBookkeepingDescription;

export interface SubgraphEnterDescription extends Described {
  type: 'SUBGRAPH';
  boundary: 'ENTER';
  /** Built id of the SUBGRAPH node (not itself a state). */
  subgraphNodeId: string;
  /** variables: the child's declarations, initialised in the new subgraph scope. */
  config: {
    workflowId: string;
    workflowVersion: number;
    variables: VariableDeclaration[];
    inputMapping?: Record<string, string>;
  };
}

export interface SubgraphExitDescription extends Described, WritesVariables {
  type: 'SUBGRAPH';
  boundary: 'EXIT';
  subgraphNodeId: string;
  config: { output?: unknown; outputMapping?: Record<string, string> };
}

/** `:fail`: marks the thread FAILED with the error a Catch put at `$.error`. */
export interface FailDescription {
  id: string;
  type: 'END';
  workflowId: string;
}

/** What `node` is for action `execute`, by node type. */
export type NodeDescription =
  | StartDescription
  | EndDescription
  | VariableDescription
  | CodeDescription
  | LlmDescription
  | ToolDescription
  | UserInteractionDescription
  | ContextProcessorDescription
  | RouteDescription
  | LoopStartDescription
  | LoopEndDescription
  | ForkDescription
  | JoinDescription
  | SubgraphEnterDescription
  | SubgraphExitDescription;

export type NodeDescriptionOf<T extends NodeType> = Extract<NodeDescription, { type: T }>;

/** `stepthread:resume`: the execution a run continues in (START's function serves it). */
export interface ResumeDescription {
  id: string;
  type: 'START';
  workflowId: string;
}

// ---- Parameters as written in the definition (keys ending in `.$` are JSONPaths) ----

/**
 * When the definition continues runs (continuation.ts): the history events this Task state adds, with
 * the Choice, Pass, Parallel and Wait states it alone leads to; the dispatch adds it to the envelope's
 * `history` before the handler runs.
 */
interface Counted {
  historyEvents?: number;
  /** A FORK compiled with CompileOptions.traceContext: its envelope always carries `fork.traceparent`. */
  traceContext?: true;
}

export type StartTaskParameters = Counted & {
  action: 'execute';
  node: NodeRef;
  'executionId.$': '$$.Execution.Id';
  /** The execution input, `{ input?, threadId? }`. */
  'input.$': '$';
};

export type EnvelopeTaskParameters = Counted &
  /** A node's own Task: `action` left out, execute being the default (bytes per node). */
  (
    | {
        action?: 'execute';
        node: NodeRef;
        'envelope.$': '$';
        /** The node is its path's last before the JOIN: its step also reports the path (see compile.ts). */
        report?: JoinBranchDescription;
      }
    | { action: 'answer'; node: NodeRef; 'envelope.$': '$' }
    | { action: 'branch-done' | 'branch-failed'; node: JoinBranchDescription; 'envelope.$': '$' }
    | { action: 'timeout'; node: JoinTimeoutDescription; 'envelope.$': '$' }
    | { action: 'fail'; node: FailDescription; 'envelope.$': '$' }
  );

/** `stepthread:resume`: the predecessor's envelope and resume point come from the execution input. */
export type ResumeTaskParameters = Counted & {
  action: 'resume';
  node: ResumeDescription;
  'executionId.$': '$$.Execution.Id';
  'envelope.$': '$.resume.envelope';
  'resume.$': '$.resume';
};

export type TaskParameters = StartTaskParameters | EnvelopeTaskParameters | ResumeTaskParameters;

/** `<node>:continue`: StartExecution of this same state machine with the resume marker as input. */
export interface StartExecutionParameters {
  'StateMachineArn.$': '$$.StateMachine.Id';
  /** An intrinsic naming the successor (SUCCESSOR_NAME_EXPRESSION). */
  'Name.$': string;
  Input: {
    resume: ResumePoint & { 'envelope.$': '$' };
    /** The key Step Functions' console links executions by (continuation.ts STARTED_BY_KEY). */
    'AWS_STEP_FUNCTIONS_STARTED_BY_EXECUTION_ID.$': '$$.Execution.Id';
  };
}

export interface WaitForTokenParameters {
  FunctionName: string;
  Payload:
    | {
        action: 'execute';
        node: NodeRef;
        'envelope.$': '$';
        'taskToken.$': '$$.Task.Token';
      }
    | {
        action: 'approval';
        node: NodeRef;
        'envelope.$': '$';
        'taskToken.$': '$$.Task.Token';
      };
}

// ---- What a handler receives once Step Functions has resolved those paths ----

/** The error output a Catch writes (`$.error`, `$.joinEnd`). */
export interface AslErrorOutput {
  Error: string;
  Cause?: string;
}

/** An envelope as a Task receives it: after a Catch it also carries the caught error. */
export type IncomingEnvelope = Envelope & {
  error?: AslErrorOutput;
  joinEnd?: AslErrorOutput;
  /** An LLM node's tool call waits for approval: the Choice after its Task goes to the wait. */
  approval?: ApprovalMark;
  /** What the approval's waitForTaskToken Task received (SendTaskSuccess), back at the LLM node. */
  answer?: unknown;
};

/** Set by an LLM node's Task that stopped before a tool call held for approval. */
export interface ApprovalMark {
  /** Which question of the node's visit, from 1 (one approval after the other). */
  ask: number;
  /** The tool the held call calls. */
  tool: string;
}

/** The execution input (what `stepthread run` / StartExecution sends). */
export interface ExecutionInput {
  input?: Record<string, unknown>;
  /** Run on this root thread id instead of one derived from the execution id. */
  threadId?: string;
  /**
   * A W3C trace context (`00-<trace id>-<span id>-<flags>`): the run's trace joins the caller's, its
   * span a child of that span (functions/telemetry). Without it a run's trace id derives from its
   * execution id.
   */
  traceparent?: string;
  /** This run's budget, each limit over the workflow's (`run --budget`, `start --budget`). */
  budget?: Budget;
}

export type TaskEvent =
  | { action: 'execute'; node: StartDescription; executionId: string; input: ExecutionInput }
  /** A continuing run's new execution: `executionId` is its own, the envelope its predecessor's. */
  | {
      action: 'resume';
      node: ResumeDescription;
      executionId: string;
      envelope: IncomingEnvelope;
      resume: ResumePoint | CopyStartPoint;
      historyEvents?: number;
    }
  | {
      action: 'execute';
      node: Exclude<NodeDescription, StartDescription>;
      envelope: IncomingEnvelope;
      report?: JoinBranchDescription;
    }
  /** USER_INTERACTION, after unwrapping the Lambda invoke `Payload`. */
  | { action: 'execute'; node: UserInteractionDescription; envelope: IncomingEnvelope; taskToken: string }
  /** After the waitForTaskToken Task: its result (or the error its Catch recorded) is in the envelope. */
  | { action: 'answer'; node: UserInteractionDescription; envelope: IncomingEnvelope & { answer?: unknown } }
  /** An LLM node's approval wait, after unwrapping the Lambda invoke `Payload`. */
  | { action: 'approval'; node: LlmDescription; envelope: IncomingEnvelope; taskToken: string }
  | { action: 'branch-done' | 'branch-failed'; node: JoinBranchDescription; envelope: IncomingEnvelope }
  | { action: 'timeout'; node: JoinTimeoutDescription; envelope: IncomingEnvelope }
  | { action: 'fail'; node: FailDescription; envelope: IncomingEnvelope & { error: AslErrorOutput } };
