/**
 * The embedded local runtime: a workflow compiled to ASL runs in aws-local-stepfunctions, each Task
 * state calling the same `dispatch` the Lambdas wrap, in-process, against whatever stores the given
 * clients point at (dynalite + s3rver by default, LocalStack or AWS by endpoint). A run ends clean:
 * when the execution settles, slow work still in flight (a branch the join no longer needs) is
 * aborted and awaited, so nothing writes after the caller closes the services.
 */

import { randomUUID } from 'node:crypto';
import {
  continueAfterEventsFromEnv,
  EXECUTION_ALREADY_EXISTS,
  HISTORY_EVENTS,
  type ResumeInput,
} from '../../engine/asl/continuation.ts';
import { copyStartInput } from '../../engine/asl/copy-start.ts';
import {
  type AslDefinition,
  compileWorkflow,
  type TaskStateEntry,
  taskStateIndex,
} from '../../engine/asl/index.ts';
import { describedDefinition, type NodeTable } from '../../engine/asl/node-table.ts';
import { JOIN_DECIDED_KEY } from '../../engine/asl/task-input.ts';
import { openConversation } from '../../engine/conversation/index.ts';
import type { Message } from '../../engine/conversation/types.ts';
import { type CodedError, StepthreadError } from '../../engine/errors.ts';
import { buildGraph } from '../../engine/graph/build.ts';
import { inFlightNodeOf } from '../../engine/graph/in-flight.ts';
import { checkValueDepth } from '../../engine/model/json-values.ts';
import {
  type Budget,
  DEFAULT_MAX_STEPS,
  type VariableDeclaration,
  type Workflow,
} from '../../engine/model/schema.ts';
import {
  COPY_EDITS_KEY,
  type CopyEdit,
  checkCopyEdits,
  type RecordedCopyEdit,
  type StateEdit,
  withCopyEdits,
} from '../../engine/thread/copy-edits.ts';
import {
  CopyEditRefused,
  checkWorkflowEdits,
  isWorkflowEdit,
  refusedEdit,
  WORKFLOW_EDITS_KEY,
  type WorkflowEdit,
  workflowEditsOf,
  workflowForThread,
} from '../../engine/thread/copy-workflow-edits.ts';
import {
  checkDeployedWorkflowEdits,
  type DeployedWorkflow,
} from '../../engine/thread/deployed-workflow-edits.ts';
import { copyThread, isTerminalStatus, lineageOf } from '../../engine/thread/index.ts';
import type { EngineEnv, Envelope, Thread, ThreadStatus } from '../../engine/thread/types.ts';
import type { CodeSource } from '../../engine/validation/code-sources.ts';
import type { AwsClients } from '../aws/clients.ts';
import { type CancelOutcome, cancelRun, cancelRunRecords } from '../cancel/cancel-run.ts';
import { type CancelMark, createCancelMarks } from '../cancel/marks.ts';
import { RunCancelled, rootThreadIdOf, waitsOutside, withCancelWatch } from '../cancel/watch.ts';
import { createEventBridgePublisher, type EventPublisher, loadPutEvents } from '../events/publisher.ts';
import {
  createHandlerStores,
  type HandlerDeps,
  type HandlerStores,
  type NodeLogsEntry,
  type NodeResultEntry,
  type ReplyTextEntry,
} from '../handlers/deps.ts';
import { dispatch } from '../handlers/dispatch.ts';
import { memoryNodeTables } from '../handlers/node-tables.ts';
import { systemEnv } from '../handlers/system-env.ts';
import { codedErrorFromAsl, nodeFailed } from '../handlers/task.ts';
import type { ProviderFactory } from '../llm/provider.ts';
import { failRun } from '../nodes/fail.ts';
import { rootThreadIdFor } from '../nodes/ids.ts';
import { budgetMarkOf, parseBudget, requireSpend, runBudgetOf } from '../nodes/run-budget.ts';
import { RUN_FROM_KEY, type RunFrom } from '../nodes/run-from.ts';
import {
  answerFor,
  type InteractionReply,
  type InteractionTaskResult,
  interactionFailure,
} from '../nodes/user-interaction.ts';
import { canonicalJson } from '../stores/canonical-json.ts';
import type { Interaction } from '../stores/interaction-store.ts';
import { copySourceOf } from '../stores/thread-store.ts';
import { type CopyPoint, threadBefore } from '../stores/time-travel.ts';
import { claimCheck, hydrateAll } from '../stores/value-store.ts';
import { flushTracing, tracingConfigured } from '../telemetry/index.ts';
import { toolRuntimeFromEnv } from '../tools/runtime.ts';
import { definitionStartingAt, withAwsTaskTimeouts, withLocalDistributedMaps } from './definition.ts';
import { awsHistoryEvents } from './history.ts';
import { exampleAnswers, waitingMessage } from './interaction-hints.ts';
import { AnsweredElsewhere, offeredReply } from './offered-replies.ts';
import { pendingSuccessor, runChainOf, successorInputOf } from './resume-chain.ts';
import { detailsOfRun, getLocalRun } from './run-registry.ts';
import {
  createLocalRunner,
  type LocalEvent,
  type LocalExecutionResult,
  type LocalRunner,
} from './state-machine.ts';

/** Where a copy starts: the source's current node (default), before a node's latest run, or before a step. */
export interface CopyOptions {
  readonly fromNodeId?: string;
  readonly fromStep?: number;
  /** Edits applied to the copy before its first step, and recorded on it (engine/thread/copy-edits.ts). */
  readonly edits?: readonly CopyEdit[];
  /**
   * The workflow whose declarations check the edits; default: the one the source's local run
   * recorded (or its copy source's, for a copy that has not run). Without either, a variable edit may
   * only set a variable the thread holds, of any type, and a workflow edit is refused.
   */
  readonly workflow?: Workflow;
  /**
   * Variable declarations that check the state edits instead of the workflow's (a deployed stack's,
   * read from its state machine definition).
   */
  readonly declarations?: readonly VariableDeclaration[];
  /**
   * The copy is made on a deployed stack, whose state machines hold each node's config and profile as
   * deployed: a node config or profile edit is checked against `deployedWorkflow` (read from the
   * definition), and takes effect through the handlers' overlay (engine/thread/node-overlay.ts).
   */
  readonly deployed?: boolean;
  /** The deployed workflow, as its state machine's definition holds it (deployed-workflow-edits.ts). */
  readonly deployedWorkflow?: DeployedWorkflow;
  /** Everything but writing: the copy as it would be, its edits checked (`rerun`'s dry run). */
  readonly dryRun?: boolean;
  /**
   * Where a copy without a point stands when its source's run stopped between steps (cancelled at a
   * model call or a question): the node after the source's last step. Default: found from the
   * workflow the source ran (`workflow`, or its recorded run); a deployed stack gives its own, read
   * from the state machine's definition.
   */
  readonly stoppedAt?: (thread: Thread) => Promise<string | undefined> | string | undefined;
}

export interface LocalRuntimeOptions {
  readonly clients: AwsClients;
  /** Defaults to stores over `clients`. */
  readonly stores?: HandlerStores;
  /** Clock and ids for the handlers; defaults to the system clock and random UUIDs. */
  readonly env?: EngineEnv;
  readonly providers?: ProviderFactory;
  /**
   * Days an ended run's items are kept, set as their TTL when the run ends, as a stack with
   * `retentionDays` does (dynalite ignores TTL: tests delete expired items themselves). Default: none.
   */
  readonly retentionDays?: number;
  /**
   * Continue-as-new threshold of the definitions this runtime compiles: a number of history events, or
   * `false` for never. Default: `$STEPTHREAD_CONTINUE_AFTER_EVENTS`, else the compiler's 20,000.
   */
  readonly continueAfterEvents?: number | false;
  /** How long a fork branch keeps writing contended globals (HandlerDeps.globalWritePatienceMs). */
  readonly globalWritePatienceMs?: number;
  /**
   * Where the thread events this runtime commits are published — its handlers' and a cancel's alike.
   * Default: the event bus `clients` name (a deployed stack's, from its `EventBusName` output or
   * STEPTHREAD_EVENT_BUS), else nowhere: on the embedded stores events are recorded on the threads only.
   */
  readonly events?: EventPublisher;
}

/** One Task invocation, as an interceptor sees it. */
export interface TaskCall {
  readonly entry: TaskStateEntry;
  /** The handler's event (a waitForTaskToken Task's `Payload`). */
  readonly event: unknown;
  /** 1 on the first attempt of this state on this thread step, 2 on its first retry, ... */
  readonly attempt: number;
}

export interface RunOptions {
  /** Defaults to a random UUID. */
  readonly executionId?: string;
  /** This run's budget, each limit over the workflow's (`run --budget`); checked (INVALID_BUDGET). */
  readonly budget?: Budget;
  /** Called with every execution event as it happens (progress output). */
  readonly onEvent?: (event: LocalEvent) => void;
  /**
   * Told the definition an execution runs, before its first event, with the node table its Tasks name
   * (progress output reads its states).
   */
  readonly onDefinition?: (definition: AslDefinition, nodeTable: NodeTable) => void;
  /** What a CODE node printed, once its step committed (the step's record keeps it too). */
  readonly onNodeLogs?: (entry: NodeLogsEntry) => void;
  /** A node's result, once its step committed (or replayed). */
  readonly onNodeResult?: (entry: NodeResultEntry) => void;
  /** Each piece of an LLM node's reply as it streams (with it, the providers stream their replies). */
  readonly onReplyText?: (entry: ReplyTextEntry) => void;
  /** Wraps each Task invocation; `invoke` runs the real handler (crash injection in tests). */
  readonly interceptTask?: (call: TaskCall, invoke: () => Promise<unknown>) => Promise<unknown>;
  /** Retry at once instead of after the definition's IntervalSeconds. */
  readonly noRetryWaits?: boolean;
  /**
   * Answers a USER_INTERACTION that waits for a person (a terminal prompt, an answers file, a test).
   * Interactions of parallel branches are asked concurrently and each answered on its own. No
   * callback, or `undefined` from it, fails the run with USER_INPUT_REQUIRED.
   */
  readonly answerInteraction?: (
    interaction: Interaction,
    options: {
      signal?: AbortSignal;
      /**
       * Why the previous reply was refused (INVALID_INTERACTION_ANSWER: a selection not among the
       * options, the wrong kind of answer). The interaction still waits: it is asked again, up to
       * MAX_ANSWER_ATTEMPTS times in all, and the last reply, fitting or not, is the answer.
       */
      refused?: CodedError;
    },
  ) => Promise<InteractionReply | undefined>;
  /** Called when an execution ends by continuing the run (continue-as-new), before its successor starts. */
  readonly onContinue?: (ended: ExecutionSummary, successorId: string) => void;
  /**
   * The workflow file's folder, which a module tool's relative path (`module:./tools/lookup.js`) is
   * resolved from (README, "Tools"); without it, $STEPTHREAD_WORKFLOW_DIR.
   */
  readonly workflowDir?: string;
}

/** One execution of a run: a run that continued has several, each started by the one before. */
export interface ExecutionSummary {
  readonly executionId: string;
  /** CONTINUED when it ended by starting the next one, else how it ended. */
  readonly status: 'CONTINUED' | LocalExecutionResult['status'];
  /** Events the local runner logged. */
  readonly localEvents: number;
  /** History events Step Functions would have recorded for it (functions/local/history.ts). */
  readonly historyEvents: number;
}

export interface RunOutcome {
  /** The run's last execution (the one that ended it); `executions` lists every one. */
  readonly executionId: string;
  /** The root thread (absent only when the run failed before creating it). */
  readonly threadId: string;
  /** The root thread's final status; FAILED when the thread could not be created. */
  readonly status: ThreadStatus;
  readonly output?: unknown;
  /** The coded error of a failed run. */
  readonly error?: CodedError;
  /** How the last execution ended. */
  readonly execution: LocalExecutionResult;
  /** Every execution's events, in order. */
  readonly events: readonly LocalEvent[];
  /** The executions of the run, first to last (one unless it continued). */
  readonly executions: readonly ExecutionSummary[];
  /** The largest state input or output in the events, as JSON bytes (the 256 KiB limit's measure). */
  readonly largestPayloadBytes: number;
  /** Handler invocations, retries included. */
  readonly taskInvocations: number;
}

/** A workflow compiled once, its local state machine built once; run it as often as needed. */
export interface PreparedWorkflow {
  readonly workflow: Workflow;
  readonly definition: AslDefinition;
  readonly tasks: readonly TaskStateEntry[];
  readonly maxSteps: number;
  /** The node whose Task the machine starts at (START unless prepared for a thread). */
  readonly startNodeId: string;
  run(input?: Record<string, unknown>, options?: RunOptions): Promise<RunOutcome>;
  /** Runs an existing (e.g. copied) thread from its current node, as a new execution. */
  runThread(threadId: string, options?: RunOptions): Promise<RunOutcome>;
  /**
   * Runs a copied thread from its current node as a deployed state machine does (`start --thread`):
   * through the definition's entry (engine/asl/copy-start.ts), which claims the thread and jumps to
   * its node's Task, on the definition as compiled from START; a copy's node config and profile edits
   * take effect in the handlers (their overlay), not in the definition. Prepare without a start node.
   */
  startThread(threadId: string, options?: RunOptions): Promise<RunOutcome>;
  /**
   * Runs a run that stopped (its process killed) again, given any of its executions' ids, to its end:
   * the execution that was in flight runs again under its own id (a run that continued: with the
   * input its predecessor passed, or its successor starts when it stopped at the continuation), every
   * step its threads committed replays from its record (nothing is applied twice, no model is called
   * again), and the run goes on from the step that was in flight. Prepare with `resumePlanOf`'s
   * start node and the run's continue-as-new threshold.
   */
  resume(
    executionId: string,
    options?: Omit<RunOptions, 'executionId'>,
    /** The run's input, for a run that stopped before START committed (plan.started false). */
    input?: Record<string, unknown>,
  ): Promise<RunOutcome>;
}

/**
 * How an interrupted run is run again: its in-flight execution from START, from the node a
 * `run --thread` started at, or — for a run that continued — from the input its predecessor started
 * it with (or its successor's, when it was about to continue).
 */
export interface ResumePlan {
  /** The run's in-flight execution, whichever of its executions' ids was asked for. */
  readonly executionId: string;
  readonly rootThreadId: string;
  readonly workflowId: string;
  /** Undefined: from START. */
  readonly startNodeId?: string;
  /** False: killed before START committed anything; `resume` needs the run's input again. */
  readonly started: boolean;
  /** The run's executions with a record, first to last (one unless it continued). */
  readonly chain: readonly string[];
  /** Set when the in-flight execution continues another (continue-as-new). */
  readonly continuedFrom?: string;
}

/** RUN_NOT_RESUMABLE unless the plan's run runs `workflowId` (resume with another workflow's file). */
export function refuseOtherWorkflow(executionId: string, plan: ResumePlan, workflowId: string): void {
  if (plan.workflowId === workflowId) return;
  throw new StepthreadError(
    'RUN_NOT_RESUMABLE',
    `execution ${executionId} runs workflow ${plan.workflowId}, not ${workflowId}`,
  );
}

export interface PrepareOptions {
  /** Start at this top-level node's Task instead of START (to run a thread from its current node). */
  startNodeId?: string;
  /** Overrides the runtime's continue-as-new threshold for this workflow. */
  continueAfterEvents?: number | false;
  /** Raises the definition size check (CompileOptions.maxDefinitionBytes), for measurements only. */
  maxDefinitionBytes?: number;
}

export interface LocalRuntime {
  readonly stores: HandlerStores;
  prepare(workflow: Workflow, options?: PrepareOptions): PreparedWorkflow;
  /**
   * Copies a thread (seed 002): status CREATED, step bookkeeping reset so it runs as a fresh root,
   * current node = `fromNodeId` (default: the source's current node).
   */
  copyThread(threadId: string, options?: CopyOptions): Promise<Thread>;
  /** The thread's visible conversation. */
  conversationOf(thread: Thread): Promise<Message[]>;
  /**
   * Where `resume` starts a run again, given any of its executions' ids (EXECUTION_NOT_FOUND,
   * RUN_NOT_RESUMABLE). With `workflowId`, an execution that never got past START (no record) is
   * planned from START.
   */
  resumePlanOf(executionId: string, unstarted?: { workflowId: string }): Promise<ResumePlan>;
  /**
   * Cancels the run an execution or thread id names (functions/cancel/cancel-run.ts): a run of this
   * runtime stops at once, a run of another process within LOCAL_CANCEL_POLL_MS of its next look;
   * `stop` also stops it elsewhere (StopExecution on AWS).
   */
  cancel(
    ref: string,
    options?: { reason?: string; stop?: (mark: CancelMark) => Promise<void> },
  ): Promise<CancelOutcome>;
  /** Why and when a run was cancelled (its cancel mark, by root thread id); undefined when it was not. */
  cancelMarkOf(rootThreadId: string): Promise<CancelMark | undefined>;
}

/**
 * How often a local run waiting on a model, a tool or a person looks for its cancel mark (a cancel
 * from another process: `stepthread cancel` beside `stepthread run`); a cancel in this process stops
 * it at once.
 */
export const LOCAL_CANCEL_POLL_MS = 250;

/** The EventBridge publisher of the bus the clients name (a deployed stack's); none otherwise. */
function busPublisherOf(clients: AwsClients): EventPublisher | undefined {
  if (clients.eventBusName === undefined || clients.target.kind === 'embedded') return undefined;
  return createEventBridgePublisher({ busName: clients.eventBusName, load: loadPutEvents(clients.target) });
}

/**
 * The node a stored thread runs from on its own (`run --thread`, the console's run), or a coded error
 * saying why it cannot: a fork branch's thread (or a copy of one) runs only inside its FORK's
 * Parallel or Map state, and a thread with no current node has nothing to run.
 */
export function runnableStartOf(thread: Thread): string {
  if (isTerminalStatus(thread.status)) {
    throw new StepthreadError(
      'INVALID_STATUS_TRANSITION',
      `thread ${thread.id} is ${thread.status}; copy it (stepthread copy ${thread.id}) and run the copy`,
    );
  }
  if (thread.metadata.forkPathId !== undefined) {
    throw new StepthreadError(
      'COPY_POINT_IN_FORK_BRANCH',
      `thread ${thread.id} is a fork branch's thread (path ${thread.metadata.forkPathId}): its nodes run inside their FORK, so it cannot run on its own; to run the branch again, copy the run's root thread from the FORK (stepthread copy <root thread> --from <fork node>) and run that`,
    );
  }
  if (thread.currentNodeId === undefined) {
    throw new StepthreadError('NODE_NOT_FOUND', `thread ${thread.id} has no current node to run from`);
  }
  const started = thread.metadata[RUN_FROM_KEY] as RunFrom | undefined;
  if (started !== undefined) throw startedAlready(thread.id, started);
  return thread.currentNodeId;
}

function startedAlready(threadId: string, started: RunFrom): StepthreadError {
  return new StepthreadError(
    'INVALID_STATUS_TRANSITION',
    `thread ${threadId} was started already, by execution ${started.executionId}: resume that (stepthread resume ${started.executionId}) or copy the thread`,
  );
}

interface RunContext {
  readonly deps: HandlerDeps;
  readonly options: RunOptions;
  readonly attempts: Map<string, number>;
  readonly pending: Set<Promise<unknown>>;
  /**
   * FORKs over a list (their item thread id bases) whose join decided or timed out: the Map state
   * stopped. Step Functions then starts no further item and stops the running ones; the library keeps
   * starting queued iterations, so their Tasks are refused here instead (a gap of the local runner).
   */
  readonly stoppedMaps: Set<string>;
  invocations: number;
  /** The run's cancel mark, once it was cancelled while this execution ran. */
  cancelled?: CancelMark;
  /** The execution a `<node>:continue` Task started (locally: asked for; it runs once this one ends). */
  successor?: { name: string; input: ResumeInput; startDate: string };
}

/** The item thread id base of a Task running on an item of a FORK over a list (`<base>-<index>`). */
function listItemBaseOf(event: unknown): string | undefined {
  const threadId = (event as { envelope?: { threadId?: unknown } } | undefined)?.envelope?.threadId;
  if (typeof threadId !== 'string') return undefined;
  const match = /^(t-[0-9a-f]{32})-\d+$/.exec(threadId);
  return match?.[1];
}

/** Whether a JOIN bookkeeping Task's result ends its fork: a decided report, or the timer's record. */
function decidesJoin(entry: TaskStateEntry, result: unknown): boolean {
  if (entry.action === 'timeout') return true;
  // A path's report: a `branch-done` or `branch-failed` Task, or the step of a path's last node.
  return typeof result === 'object' && result !== null && JOIN_DECIDED_KEY in result;
}

/** The item thread id base a parent's envelope names (the join timer's Task runs on the parent). */
function forkBaseOf(event: unknown): string | undefined {
  const base = (event as { envelope?: { fork?: { base?: unknown } } } | undefined)?.envelope?.fork?.base;
  return typeof base === 'string' ? base : undefined;
}

/** What a `states:startExecution` Task receives. */
interface StartExecutionInput {
  StateMachineArn: string;
  Name: string;
  Input: ResumeInput;
}

/** The handler's view of a Task's input: a waitForTaskToken `Payload`, the resume marker of a continue Task. */
function handlerEventOf(entry: TaskStateEntry, raw: unknown): unknown {
  if (entry.invocation === 'waitForTaskToken') return (raw as { Payload: unknown }).Payload;
  if (entry.invocation === 'startExecution') return (raw as StartExecutionInput).Input.resume;
  return raw;
}

function executionIdOf(event: unknown): string | undefined {
  const e = event as { executionId?: unknown; envelope?: { executionId?: unknown } } | undefined;
  // START and `resume` name their own execution (a resume's envelope is its predecessor's).
  const id = e?.executionId ?? e?.envelope?.executionId;
  return typeof id === 'string' ? id : undefined;
}

function attemptKey(entry: TaskStateEntry, event: unknown): string {
  const e = event as { envelope?: { threadId?: unknown; step?: unknown; approval?: { ask?: unknown } } };
  // An LLM node back from a tool call's approval runs its Task anew, not as a retry.
  const ask = e.envelope?.approval?.ask;
  return `${entry.stateName}\n${String(e.envelope?.threadId ?? '')}\n${String(e.envelope?.step ?? '')}${ask === undefined ? '' : `\n${String(ask)}`}`;
}

function jsonBytes(value: unknown): number {
  if (value === undefined) return 0;
  return Buffer.byteLength(JSON.stringify(value) ?? '', 'utf8');
}

export function largestPayloadBytes(events: readonly LocalEvent[]): number {
  let largest = 0;
  for (const event of events) largest = Math.max(largest, jsonBytes(event.input), jsonBytes(event.output));
  return largest;
}

interface InteractionEvent {
  node: { id: string };
  /** `approval`: an LLM node's held tool call, question `ask` of its visit. */
  envelope: { executionId: string; threadId: string; step: number; approval?: { ask: number } };
}

/** A waiting Task's failure, as SendTaskFailure would report it: its Catch hands it to `<id>:answer`. */
function interactionFailed(interaction: Interaction, reply: Extract<InteractionReply, { kind: 'fail' }>) {
  return nodeFailed(interactionFailure(interaction, reply));
}

/** How often an interaction is asked when its replies do not fit (the last reply is then the answer). */
export const MAX_ANSWER_ATTEMPTS = 3;

/**
 * Why a reply does not fit its interaction, as `respond` and the local console refuse it before it
 * reaches the run; undefined when it fits, or when it is no reply or a failure (those end the wait).
 */
function refusalOf(interaction: Interaction, reply: InteractionReply | undefined): CodedError | undefined {
  if (reply === undefined || reply.kind === 'fail') return undefined;
  try {
    answerFor(interaction, reply);
    return undefined;
  } catch (error) {
    if (error instanceof StepthreadError && error.code === 'INVALID_INTERACTION_ANSWER')
      return error.toJSON();
    throw error;
  }
}

export function createLocalRuntime(options: LocalRuntimeOptions): LocalRuntime {
  // One process runs each thread's steps in turn, so a step reuses the head its thread's previous
  // commit wrote here (a GetItem less). What a step decides on that head ends in a write conditional
  // on its version, or follows a fresh read (a question is recorded after awaitInteraction reads the
  // thread): a head another writer moved on costs a VERSION_CONFLICT and a retry, never a wrong step.
  const stores = options.stores ?? createHandlerStores(options.clients, { reuseWrittenHeads: true });
  const env = options.env ?? systemEnv;
  const marks = createCancelMarks(options.clients);
  const publisher = options.events ?? busPublisherOf(options.clients);
  /** How each execution running in this runtime is stopped when its run is cancelled, by execution id. */
  const cancellers = new Map<string, (mark: CancelMark) => void>();

  const conversationOf = async (thread: Thread): Promise<Message[]> => {
    const log = await stores.conversations.readLog(thread.conversation.log);
    return openConversation(thread.conversation, log).visibleMessages();
  };

  const prepare = (workflow: Workflow, prepareOptions: PrepareOptions = {}): PreparedWorkflow => {
    // Read when a workflow is prepared, so commands that run nothing never trip over the setting.
    const threshold =
      prepareOptions.continueAfterEvents ??
      options.continueAfterEvents ??
      continueAfterEventsFromEnv(process.env);
    const compiledWorkflow = compileWorkflow(workflow, {
      ...(threshold === undefined ? {} : { continueAfterEvents: threshold }),
      ...(prepareOptions.maxDefinitionBytes === undefined
        ? {}
        : { maxDefinitionBytes: prepareOptions.maxDefinitionBytes }),
      // Exporting traces: fork branches and Map items carry the run's trace context.
      ...(tracingConfigured() ? { traceContext: true } : {}),
    });
    const compiled = compiledWorkflow.definition;
    // The Tasks name their nodes in this table: the runtime serves it from memory, as compiled.
    const nodeTables = memoryNodeTables();
    const nodeTable = nodeTables.add(compiledWorkflow.nodeTable.ref, compiledWorkflow.nodeTable.json);
    const fullIndex = taskStateIndex(compiled);
    const startEntry = fullIndex.find((entry) => entry.nodeType === 'START' && entry.action === 'execute');
    const startNodeId = prepareOptions.startNodeId ?? startEntry?.nodeId ?? '';
    let definition = compiled;
    if (prepareOptions.startNodeId !== undefined && prepareOptions.startNodeId !== startEntry?.nodeId) {
      const entry = fullIndex.find(
        (candidate) =>
          candidate.nodeId === prepareOptions.startNodeId &&
          candidate.action === 'execute' &&
          Object.hasOwn(compiled.States, candidate.stateName),
      );
      if (entry === undefined) {
        throw new StepthreadError(
          'NODE_NOT_FOUND',
          `node ${prepareOptions.startNodeId} is not a top-level node of workflow ${workflow.id}; a thread can only be run from one`,
          { nodeId: prepareOptions.startNodeId },
        );
      }
      definition = definitionStartingAt(compiled, entry.stateName);
    }
    const tasks = taskStateIndex(definition);
    const runs = new Map<string, RunContext>();

    const invoke = (entry: TaskStateEntry) => async (raw: unknown) => {
      const event = handlerEventOf(entry, raw);
      const executionId = executionIdOf(event);
      const context = executionId === undefined ? undefined : runs.get(executionId);
      if (context === undefined) {
        throw new StepthreadError(
          'INVALID_TASK_INPUT',
          `Task ${entry.stateName}: no local run for its execution`,
        );
      }
      const itemBase = listItemBaseOf(event);
      if (itemBase !== undefined && context.stoppedMaps.has(itemBase)) {
        throw Object.assign(new Error(`Map of ${itemBase} stopped: its join decided`), {
          name: 'AbortError',
        });
      }
      const key = attemptKey(entry, event);
      const attempt = (context.attempts.get(key) ?? 0) + 1;
      context.attempts.set(key, attempt);
      context.invocations += 1;
      const deps: HandlerDeps = { ...context.deps, attempt };
      // Waits on a model, a tool or a person end when the run is cancelled from another process.
      const watched = (work: (watchedDeps: HandlerDeps) => Promise<unknown>) => () =>
        withCancelWatch(deps.cancelWatch, rootThreadIdOf(event), deps.signal, (signal) =>
          work(signal ? { ...deps, signal } : deps),
        );
      const call =
        entry.invocation === 'waitForTaskToken'
          ? watched((watchedDeps) => awaitInteraction(event as InteractionEvent, watchedDeps, context))
          : entry.invocation === 'startExecution'
            ? () => startSuccessor(raw as StartExecutionInput, context)
            : waitsOutside(entry.nodeType)
              ? watched((watchedDeps) => dispatch(event, watchedDeps))
              : () => dispatch(event, deps);
      const intercept = context.options.interceptTask;
      const promise = intercept ? intercept({ entry, event, attempt }, call) : call();
      context.pending.add(promise);
      try {
        const result = await promise;
        // A report that decided its join, or the join's timer: the Parallel or Map stops (its Fail
        // state raises JoinDecided or JoinTimeout), so its items still queued never start.
        if (decidesJoin(entry, result)) {
          const base = itemBase ?? forkBaseOf(event);
          if (base !== undefined) context.stoppedMaps.add(base);
        }
        return result;
      } finally {
        context.pending.delete(promise);
      }
    };
    /**
     * `<node>:continue` (states:startExecution), locally: the successor is remembered and started, with
     * the same definition, when this execution has ended. Like StartExecution with a name: the same
     * name and input again returns the same execution; another input under that name is refused.
     */
    const startSuccessor = async (
      request: StartExecutionInput,
      context: RunContext,
    ): Promise<{ ExecutionArn: string; StartDate: string }> => {
      const known = context.successor;
      if (known === undefined) {
        context.successor = { name: request.Name, input: request.Input, startDate: env.now() };
      } else if (known.name !== request.Name || canonicalJson(known.input) !== canonicalJson(request.Input)) {
        throw Object.assign(
          new Error(`execution ${known.name} was started already; ${request.Name} cannot start too`),
          { name: EXECUTION_ALREADY_EXISTS },
        );
      }
      const started = context.successor!;
      return { ExecutionArn: started.name, StartDate: started.startDate };
    };

    /**
     * A waitForTaskToken Task, locally: the handler records the interaction, the run's answer source
     * is asked, and the Task's result is what `respond` would send — `{ reply, requestedAt }` — or it
     * fails as SendTaskFailure would. Either way `<id>:answer` then runs in-process like any Task and
     * commits it. Each waiting Task settles once, with the one reply its source gives.
     */
    const awaitInteraction = async (
      event: InteractionEvent,
      deps: HandlerDeps,
      context: RunContext,
    ): Promise<InteractionTaskResult> => {
      const { threadId, executionId, step } = event.envelope;
      // The library hands every Task the same $$.Task.Token; make one per thread step and node.
      const ask = event.envelope.approval?.ask;
      const taskToken = `local:${executionId}:${threadId}:${step}:${event.node.id}${ask === undefined ? '' : `:${ask}`}`;
      const { thread: current } = await stores.threads.getThread(threadId);
      if ((current.step ?? 0) > step) {
        // A resumed run passing a question answered before: `<id>:answer` replays the committed step.
        return { reply: { kind: 'input', value: null } };
      }
      await dispatch({ ...event, taskToken }, deps);
      const interaction = await stores.interactions!.getInteraction(threadId, event.node.id);
      if (interaction.status !== 'PENDING' || interaction.taskToken !== taskToken) {
        throw nodeFailed({
          code: 'INTERACTION_NOT_DELIVERED',
          message: `interaction ${interaction.interactionId} is no longer waiting for this run`,
          nodeId: interaction.nodeId,
        });
      }
      let reply: InteractionReply | undefined;
      try {
        let refused: CodedError | undefined;
        for (let attempt = 1; ; attempt++) {
          // The run may end (another branch failed) while a person is still being asked.
          reply = await untilAborted(askOrOffered(interaction, context, deps.signal, refused), deps.signal);
          refused = attempt < MAX_ANSWER_ATTEMPTS ? refusalOf(interaction, reply) : undefined;
          if (refused === undefined) break;
        }
      } catch (error) {
        if (deps.signal?.aborted) {
          // Nobody can answer it any more: close it so it is not listed as pending.
          const cancelled = deps.signal.reason instanceof RunCancelled ? deps.signal.reason : undefined;
          await stores.interactions
            ?.close(
              interaction,
              cancelled
                ? { outcome: 'FAILED', code: 'RUN_CANCELLED', reason: cancelled.message }
                : {
                    outcome: 'FAILED',
                    code: 'USER_INTERACTION_FAILED',
                    reason: 'the run ended before it was answered',
                  },
              env.now(),
            )
            .catch(() => {});
          throw error;
        }
        reply = { kind: 'fail', reason: error instanceof Error ? error.message : String(error) };
      }
      reply ??= { kind: 'fail', code: 'USER_INPUT_REQUIRED', reason: inputRequiredMessage(interaction) };
      if (reply.kind === 'fail') throw interactionFailed(interaction, reply);
      return { reply, requestedAt: interaction.requestedAt };
    };

    /**
     * The run's answer source, or a reply `stepthread respond` offers from another process, whichever
     * comes first; the other is then stopped (the source's signal aborts with AnsweredElsewhere when
     * respond answered). Without a source nobody here waits, so nothing is polled either.
     */
    const askOrOffered = async (
      interaction: Interaction,
      context: RunContext,
      runSignal: AbortSignal | undefined,
      refused: CodedError | undefined,
    ): Promise<InteractionReply | undefined> => {
      const source = context.options.answerInteraction;
      if (source === undefined) return undefined;
      const stop = new AbortController();
      const signal = runSignal ? AbortSignal.any([runSignal, stop.signal]) : stop.signal;
      const asking = source(interaction, { signal, ...(refused ? { refused } : {}) });
      // Stopped below whichever way the race ends; what it settles with then is not wanted.
      asking.catch(() => {});
      let offeredFirst = false;
      const offered = offeredReply(stores.interactions!, interaction, signal).then((reply) => {
        offeredFirst = true;
        return reply;
      });
      try {
        return await Promise.race([asking, offered]);
      } finally {
        // Only once the race is decided: a source settling as it is stopped must not win it.
        stop.abort(offeredFirst ? new AnsweredElsewhere() : undefined);
      }
    };

    // Distributed Maps run as an S3 read and an inline Map (see withLocalDistributedMaps); Tasks
    // without a timeout wait as on AWS, not the local runner's 60 s (see withAwsTaskTimeouts).
    const mapped = withLocalDistributedMaps(definition);
    const local = { ...mapped, definition: withAwsTaskTimeouts(mapped.definition) };
    const readItems = async (input: unknown) => {
      const { Bucket, Key } = input as { Bucket: string; Key: string };
      if (stores.itemLists === undefined) {
        throw new StepthreadError('INVALID_STATE_MACHINE', 'a Distributed Map needs the item list store');
      }
      return stores.itemLists.readItemList(Bucket, Key);
    };
    const runner: LocalRunner = createLocalRunner(
      local.definition,
      {
        ...Object.fromEntries(tasks.map((entry) => [entry.stateName, invoke(entry)])),
        ...Object.fromEntries(local.readers.map((name) => [name, readItems])),
      },
      // The definition is compileWorkflow's own output, which the ASL tests check with asl-validator;
      // validating it again here would compile the ASL JSON Schema on every command (~0.5 s).
      { noValidate: true },
    );

    const maxSteps = workflow.maxSteps ?? DEFAULT_MAX_STEPS;
    // Counting history (continue-as-new) only where some Choice may continue the run.
    const counting = tasks.some((entry) => entry.action === 'continue');
    const stateMachineId = `local:${workflow.id}`;

    /** Runs the execution, then each successor it continued in, to the end of the run. */
    const execute = async (
      input: unknown,
      rootThreadId: string,
      executionId: string,
      runOptions: RunOptions,
    ): Promise<RunOutcome> => {
      const executions: ExecutionSummary[] = [];
      const events: LocalEvent[] = [];
      let invocations = 0;
      let current = { input, executionId };
      for (;;) {
        const one = await executeOne(current.input, current.executionId, runOptions);
        for (const event of one.events) events.push(event);
        const cancelled = await cancelledRun(one, rootThreadId);
        invocations += one.invocations;
        const continued = one.successor !== undefined && one.execution.status === 'SUCCEEDED';
        const summary: ExecutionSummary = {
          executionId: current.executionId,
          status: continued ? 'CONTINUED' : one.execution.status,
          localEvents: one.events.length,
          historyEvents: awsHistoryEvents(one.events, definition),
        };
        executions.push(summary);
        if (!continued) {
          return summarise(
            one.execution,
            events,
            rootThreadId,
            current.executionId,
            invocations,
            executions,
            cancelled,
          );
        }
        runOptions.onContinue?.(summary, one.successor!.name);
        current = { input: one.successor!.input, executionId: one.successor!.name };
      }
    };

    /**
     * The run's cancel mark when it was cancelled (here, or by another process whose cancel failed its
     * steps): its records are cancelled once more now that every handler has settled, which takes in
     * what a step in flight left (a question it asked, a child it created). Only a run that did not
     * succeed is looked up.
     */
    const cancelledRun = async (
      one: { execution: LocalExecutionResult; cancelled?: CancelMark },
      rootThreadId: string,
    ): Promise<CancelMark | undefined> => {
      const mark =
        one.cancelled ??
        (one.execution.status === 'SUCCEEDED'
          ? undefined
          : await marks.get(rootThreadId, { consistent: true }).catch(() => undefined));
      if (mark !== undefined)
        await cancelRunRecords({ ...stores, marks, ...(publisher ? { events: publisher } : {}) }, mark, env);
      return mark;
    };

    const executeOne = async (
      input: unknown,
      executionId: string,
      runOptions: RunOptions,
    ): Promise<{
      execution: LocalExecutionResult;
      events: readonly LocalEvent[];
      invocations: number;
      successor?: RunContext['successor'];
      cancelled?: CancelMark;
    }> => {
      const controller = new AbortController();
      let started: ReturnType<LocalRunner['start']> | undefined;
      // Stops the execution: its waits are aborted (their steps abandoned uncommitted), and the
      // state machine starts no further state.
      const cancel = (mark: CancelMark) => {
        if (context.cancelled !== undefined) return;
        context.cancelled = mark;
        controller.abort(new RunCancelled(mark));
        started?.abort();
      };
      const context: RunContext = {
        deps: {
          ...stores,
          nodeTables,
          env,
          signal: controller.signal,
          ...(publisher ? { events: publisher } : {}),
          cancelWatch: { marks, intervalMs: LOCAL_CANCEL_POLL_MS, onCancelled: cancel },
          ...(options.providers ? { providers: options.providers } : {}),
          ...(options.retentionDays === undefined ? {} : { retentionDays: options.retentionDays }),
          ...(options.globalWritePatienceMs === undefined
            ? {}
            : { globalWritePatienceMs: options.globalWritePatienceMs }),
          ...(runOptions.onNodeLogs ? { onNodeLogs: runOptions.onNodeLogs } : {}),
          ...(runOptions.onNodeResult ? { onNodeResult: runOptions.onNodeResult } : {}),
          ...(runOptions.onReplyText ? { onReplyText: runOptions.onReplyText } : {}),
          // Else the handlers read the tool settings from the process environment (tool-runtime.ts).
          ...(runOptions.workflowDir === undefined
            ? {}
            : { tools: toolRuntimeFromEnv(process.env, { workflowDir: runOptions.workflowDir }) }),
        },
        options: runOptions,
        attempts: new Map(),
        pending: new Set(),
        stoppedMaps: new Set(),
        invocations: 0,
      };
      runs.set(executionId, context);
      cancellers.set(executionId, cancel);
      let execution: LocalExecutionResult;
      let events: readonly LocalEvent[];
      try {
        runOptions.onDefinition?.(local.definition, nodeTable);
        started = runner.start(input, {
          executionId,
          stateMachineId,
          ...(runOptions.noRetryWaits ? { noRetryWaits: true } : {}),
          ...(runOptions.onEvent ? { onEvent: runOptions.onEvent } : {}),
        });
        if (context.cancelled !== undefined) started.abort();
        execution = await started.result;
        events = started.events;
      } finally {
        cancellers.delete(executionId);
        // Branches the join no longer needed may still be waiting on a model: stop them, and let
        // their handlers settle before anyone closes the stores under them.
        // A plain error, not a coded one: an aborted step is abandoned uncommitted, not a node failure.
        controller.abort(Object.assign(new Error(`execution ${executionId} ended`), { name: 'AbortError' }));
        while (context.pending.size > 0) await Promise.allSettled([...context.pending]);
        runs.delete(executionId);
        // The execution's spans go out before the caller goes on (or the process exits).
        await flushTracing();
      }
      return {
        execution,
        events,
        invocations: context.invocations,
        ...(context.successor ? { successor: context.successor } : {}),
        ...(context.cancelled ? { cancelled: context.cancelled } : {}),
      };
    };

    const summarise = async (
      execution: LocalExecutionResult,
      events: readonly LocalEvent[],
      rootThreadId: string,
      executionId: string,
      taskInvocations: number,
      executions: readonly ExecutionSummary[],
      cancelled?: CancelMark,
    ): Promise<RunOutcome> => {
      const base = {
        executionId,
        execution,
        events,
        executions,
        largestPayloadBytes: largestPayloadBytes(events),
        taskInvocations,
      };
      const executionError: CodedError | undefined =
        execution.status === 'FAILED'
          ? codedErrorFromAsl({ Error: execution.error, Cause: execution.cause })
          : execution.status === 'SUCCEEDED'
            ? undefined
            : { code: 'NODE_EXECUTION_FAILED', message: `execution ${execution.status.toLowerCase()}` };
      let thread: Thread | undefined;
      try {
        const read = await stores.threads.getThread(rootThreadId);
        thread = read.thread;
        if (failedBeforeItsStep(execution, executionError, read.thread, executionId)) {
          // Nothing in the state machine recorded the failure (a Task failing at START, whose Catch has
          // no thread to mark): the run ends FAILED here, not RUNNING for ever.
          thread = await failRun(
            {
              ...stores,
              env,
              ...(publisher ? { events: publisher } : {}),
              ...(options.retentionDays === undefined ? {} : { retentionDays: options.retentionDays }),
            },
            read,
            executionError!,
            executionId,
          );
        }
      } catch (error) {
        if (!(error instanceof StepthreadError && error.code === 'THREAD_NOT_FOUND')) throw error;
      }
      if (thread === undefined) {
        return {
          ...base,
          threadId: rootThreadId,
          status: 'FAILED',
          error: executionError ?? {
            code: 'THREAD_NOT_FOUND',
            message: `thread ${rootThreadId} was not created`,
          },
        };
      }
      const error =
        thread.status === 'CANCELLED' && cancelled !== undefined
          ? { code: 'RUN_CANCELLED' as const, message: new RunCancelled(cancelled).message }
          : (executionError ?? (thread.status === 'COMPLETED' ? undefined : thread.errors.at(-1)));
      const output = (await hydrateAll(stores.values, [{ output: thread.output }])).data[0]?.output;
      return {
        ...base,
        threadId: thread.id,
        status: thread.status,
        ...(output === undefined ? {} : { output }),
        ...(error ? { error } : {}),
      };
    };

    /**
     * A continued run resumes in the execution its thread is about to continue in (the successor its
     * last step's Choice starts: not started, started, or claimed the thread without a step yet), or
     * in its in-flight successor execution, each with the input its predecessor passed, recomputed from
     * the stores. Undefined: the run is in its first execution, not at a continuation.
     */
    const continuedRunInput = async (
      plan: ResumePlan,
      thread: Thread,
    ): Promise<{ executionId: string; input: ResumeInput } | undefined> => {
      const successor = pendingSuccessor(definition, thread);
      if (successor !== undefined) return { executionId: successor.name, input: successor.input };
      if (plan.continuedFrom === undefined) return undefined;
      const record = await stores.executions.getExecution(plan.executionId);
      return {
        executionId: plan.executionId,
        input: await successorInputOf(stores.threads, definition, thread, record),
      };
    };

    return {
      workflow,
      definition,
      tasks,
      maxSteps,
      startNodeId,
      run(input = {}, runOptions = {}) {
        if (startEntry === undefined || startNodeId !== startEntry.nodeId) {
          throw new StepthreadError(
            'INVALID_STATE_MACHINE',
            'this definition starts at a node: use runThread',
          );
        }
        // Refused before anything runs or is stored (START refuses it too, on AWS).
        let budget: Budget | undefined;
        try {
          checkValueDepth(input, 'the run input', startNodeId);
          budget = runOptions.budget === undefined ? undefined : parseBudget(runOptions.budget);
        } catch (error) {
          return Promise.reject(error);
        }
        const executionId = runOptions.executionId ?? randomUUID();
        const started = claimCheck(stores.values, input).then((checked) =>
          execute(
            { input: checked as Record<string, unknown>, ...(budget ? { budget } : {}) },
            rootThreadIdFor(executionId),
            executionId,
            runOptions,
          ),
        );
        return started;
      },
      async runThread(threadId, runOptions = {}) {
        const { thread, version } = await stores.threads.getThread(threadId);
        if (isTerminalStatus(thread.status)) {
          throw new StepthreadError(
            'INVALID_STATUS_TRANSITION',
            `thread ${threadId} is ${thread.status}; copy it (stepthread copy ${threadId}) and run the copy`,
          );
        }
        if (thread.workflowId !== workflow.id) {
          throw new StepthreadError(
            'INVALID_TASK_INPUT',
            `thread ${threadId} belongs to workflow ${thread.workflowId}, not ${workflow.id}`,
          );
        }
        refuseUneditedWorkflow(workflow, thread);
        if (thread.currentNodeId !== startNodeId) {
          throw new StepthreadError(
            'INVALID_STATE_MACHINE',
            `thread ${threadId} is at node ${thread.currentNodeId ?? '(none)'}, this definition starts at ${startNodeId}`,
          );
        }
        // Started once already (by another command, or a second click): that run goes on, or is
        // resumed; a second execution on the same thread would race it step for step.
        const started = thread.metadata[RUN_FROM_KEY] as RunFrom | undefined;
        if (started !== undefined) throw startedAlready(threadId, started);
        const executionId = runOptions.executionId ?? randomUUID();
        // The thread becomes this execution's root: inspect finds it by the new execution id. A run
        // the thread may have continued through before is not this one's.
        const {
          firstExecutionId: _first,
          continuations: _continuations,
          continuedAt: _at,
          noBudget: _noBudget,
          ...metadata
        } = thread.metadata;
        // START sets a run's budget; a run from a copy's node has none, so the budget is set here
        // (and a run with none says so on its head: run-budget.ts).
        const budget = runBudgetOf(workflow.budget, runOptions.budget);
        if (budget !== undefined) await requireSpend(stores).setBudget(threadId, budget);
        const runFrom: RunFrom = { executionId, nodeId: startNodeId, step: thread.step ?? 0 };
        await stores.threads.updateThread(threadId, version, {
          set: { metadata: { ...metadata, executionId, [RUN_FROM_KEY]: runFrom, ...budgetMarkOf(budget) } },
        });
        await stores.executions.putExecution({
          executionId,
          rootThreadId: threadId,
          workflowId: thread.workflowId,
          workflowVersion: thread.workflowVersion,
          status: 'RUNNING',
          startTime: env.now(),
        });
        const envelope: Envelope = {
          executionId,
          workflowId: thread.workflowId,
          workflowVersion: thread.workflowVersion,
          rootThreadId: threadId,
          threadId,
          step: thread.step ?? 0,
          maxSteps,
          // The execution's start and its dispatch Choice, as START would have counted them.
          ...(counting ? { history: HISTORY_EVENTS.execution + HISTORY_EVENTS.choice } : {}),
        };
        return execute(envelope, threadId, executionId, runOptions);
      },
      async startThread(threadId, runOptions = {}) {
        if (startEntry === undefined || startNodeId !== startEntry.nodeId) {
          throw new StepthreadError(
            'INVALID_STATE_MACHINE',
            'a copy starts through the entry of the definition compiled from START: prepare without a start node',
          );
        }
        const { thread } = await stores.threads.getThread(threadId);
        const budget = runOptions.budget === undefined ? undefined : parseBudget(runOptions.budget);
        // The entry's rules and START's facts are read from the Tasks, their nodes from the table.
        const described = describedDefinition(definition, compiledWorkflow.nodeTable.ref, nodeTable);
        const input = copyStartInput(described, thread, budget);
        return execute(input, threadId, runOptions.executionId ?? randomUUID(), runOptions);
      },
      async resume(executionId, runOptions = {}, givenInput = undefined) {
        const plan = await resumePlanOf(executionId, { workflowId: workflow.id });
        refuseOtherWorkflow(executionId, plan, workflow.id);
        if ((plan.startNodeId ?? startEntry?.nodeId) !== startNodeId) {
          throw new StepthreadError(
            'RUN_NOT_RESUMABLE',
            `execution ${executionId} started at node ${plan.startNodeId ?? 'START'}; prepare the workflow from there`,
          );
        }
        const options = { ...runOptions, executionId: plan.executionId };
        if (!plan.started) {
          if (givenInput === undefined) {
            throw new StepthreadError(
              'RUN_NOT_RESUMABLE',
              `execution ${executionId} stopped before its first step; its input is needed to run it`,
            );
          }
          const checked = await claimCheck(stores.values, givenInput);
          return execute({ input: checked }, plan.rootThreadId, plan.executionId, options);
        }
        const { thread } = await stores.threads.getThread(plan.rootThreadId);
        refuseUneditedWorkflow(workflow, thread);
        const continued = await continuedRunInput(plan, thread);
        if (continued !== undefined) {
          return execute(continued.input, thread.id, continued.executionId, options);
        }
        if (plan.startNodeId === undefined) {
          // START again, with the input it had: it finds its thread and replays from step 1.
          const first = await stores.threads.getStep(plan.rootThreadId, 1);
          const input = first?.state?.input ?? thread.input;
          return execute({ input }, plan.rootThreadId, plan.executionId, options);
        }
        const from = thread.metadata[RUN_FROM_KEY] as RunFrom;
        const envelope: Envelope = {
          executionId,
          workflowId: thread.workflowId,
          workflowVersion: thread.workflowVersion,
          rootThreadId: thread.id,
          threadId: thread.id,
          step: from.step,
          maxSteps,
          ...(counting ? { history: HISTORY_EVENTS.execution + HISTORY_EVENTS.choice } : {}),
        };
        return execute(envelope, thread.id, plan.executionId, options);
      },
    };
  };

  const resumePlanOf = async (
    executionId: string,
    unstarted?: { workflowId: string },
  ): Promise<ResumePlan> => {
    let execution: Awaited<ReturnType<typeof stores.executions.getExecution>>;
    try {
      execution = await stores.executions.getExecution(executionId);
    } catch (error) {
      if (!(unstarted && error instanceof StepthreadError && error.code === 'EXECUTION_NOT_FOUND'))
        throw error;
      // START creates the thread, then the execution record: a kill in between leaves the thread.
      const rootThreadId = rootThreadIdFor(executionId);
      const created = await stores.threads.getThread(rootThreadId).catch(() => undefined);
      const started = created?.thread.metadata.executionId === executionId;
      return { executionId, rootThreadId, workflowId: unstarted.workflowId, started, chain: [executionId] };
    }
    const notResumable = (why: string) =>
      new StepthreadError('RUN_NOT_RESUMABLE', `execution ${executionId} cannot be resumed: ${why}`);
    const { thread } = await stores.threads.getThread(execution.rootThreadId);
    // Whichever execution of a run was asked for, the one in flight is resumed.
    const run = await runChainOf(stores.executions, thread, execution);
    if (run === undefined || !run.chain.some((entry) => entry.executionId === executionId)) {
      throw notResumable(
        `its thread ${thread.id} has run in execution ${String(thread.metadata.executionId)} since`,
      );
    }
    const { current, chain } = run;
    await refuseCancelled(executionId, thread);
    // Ended while its execution still shows RUNNING: the process died between the thread's last
    // commit and the execution's end (END's after-commit work). Resuming replays the run to that
    // step, which records the end.
    if (isTerminalStatus(thread.status) && current.status !== 'RUNNING') {
      throw notResumable(`it ended ${thread.status}`);
    }
    const first = chain[0]!.executionId;
    const base = {
      executionId: current.executionId,
      rootThreadId: thread.id,
      workflowId: current.workflowId,
      started: true,
      chain: chain.map((entry) => entry.executionId),
      ...(current.continuedFrom === undefined ? {} : { continuedFrom: current.continuedFrom }),
    };
    if (thread.id === rootThreadIdFor(first)) return base;
    const from = thread.metadata[RUN_FROM_KEY] as RunFrom | undefined;
    if (from?.executionId !== first) throw notResumable('it records no place to start from');
    return { ...base, startNodeId: from.nodeId };
  };

  /**
   * The USER_INTERACTION a thread waits at, if any. Its head still names the node before (the
   * question commits nothing until answered), so a copy that ran from there would run that node again.
   */
  const waitingAt = async (thread: Thread): Promise<string | undefined> => {
    if (isTerminalStatus(thread.status) || stores.interactions === undefined) return undefined;
    const open = await stores.interactions.listOpenOfThread(thread.id);
    return open.length === 1 ? open[0]!.nodeId : undefined;
  };

  /**
   * The node a thread's run stopped at before its step committed (a model call or a question a cancel
   * closed, a process killed): its head names the node of its last step, so a copy standing there
   * would run that node again. Found from the workflow the thread ran (its graph and the last step's
   * choices); undefined when that workflow is unknown, or when the thread stands where it stopped
   * already (a copy that has not run, a failed step's node, END).
   */
  const stoppedAt = async (thread: Thread, copyOptions: CopyOptions): Promise<string | undefined> => {
    if (thread.lastEnvelope === undefined || thread.metadata.forkPathId !== undefined) return undefined;
    if (copyOptions.stoppedAt !== undefined) return copyOptions.stoppedAt(thread);
    const workflow =
      copyOptions.workflow ?? (copyOptions.deployed ? undefined : await recordedWorkflowOfLineage(thread));
    if (workflow === undefined || workflow.id !== thread.workflowId) return undefined;
    return inFlightNodeOf(buildGraph(workflow), thread);
  };

  /**
   * The FORK of the JOIN a thread failed at (its last step): a JOIN merges the branches its FORK
   * started in the same run, so a copy standing there would have none to merge. The copy stands at
   * the FORK instead and runs the branches again, as a copy of a run stopped while its branches ran
   * does. A FORK's JOIN runs on the same thread right after it: the step before the JOIN's.
   */
  const forkOfFailedJoin = async (thread: Thread): Promise<string | undefined> => {
    const step = thread.step ?? 0;
    if (step < 2 || thread.metadata.forkPathId !== undefined) return undefined;
    const last = await stores.threads.getStep(thread.id, step);
    if (last?.result.nodeType !== 'JOIN' || last.result.nodeId !== thread.currentNodeId) return undefined;
    const before = await stores.threads.getStep(thread.id, step - 1);
    return before?.result.nodeType === 'FORK' ? before.result.nodeId : undefined;
  };

  const copy = async (threadId: string, copyOptions: CopyOptions = {}): Promise<Thread> => {
    const { thread: current } = await stores.threads.getThread(threadId);
    const point: CopyPoint | undefined =
      copyOptions.fromStep !== undefined
        ? { step: copyOptions.fromStep }
        : copyOptions.fromNodeId !== undefined
          ? { nodeId: copyOptions.fromNodeId }
          : undefined;
    const isForkChild = current.metadata.forkPathId !== undefined;
    if (point !== undefined && isForkChild) {
      throw new StepthreadError(
        'COPY_POINT_IN_FORK_BRANCH',
        `thread ${threadId} is a fork branch; copy its root thread from a node outside the fork`,
      );
    }
    const past =
      point === undefined
        ? undefined
        : await threadBefore(stores.threads, current, point).catch(async (error: unknown) => {
            // A node that ran only inside a fork branch ran on a child thread, not here: say so.
            if (point !== undefined && 'nodeId' in point && error instanceof StepthreadError) {
              const execution = current.metadata.executionId;
              const children = execution ? await stores.threads.listThreadsOfExecution(execution) : [];
              for (const { thread } of children) {
                if (thread.metadata.forkPathId === undefined) continue;
                const steps = await stores.threads.readSteps(thread.id);
                if (steps.some((step) => step.result.nodeId === point.nodeId)) {
                  throw new StepthreadError(
                    'COPY_POINT_IN_FORK_BRANCH',
                    `node ${point.nodeId} runs inside a fork branch; copy from the FORK or a node outside it`,
                    { nodeId: point.nodeId },
                  );
                }
              }
            }
            throw error;
          });
    if (past?.nodeType === 'JOIN') {
      // A JOIN merges the branches its FORK started in the same run; a copy has none to merge.
      throw new StepthreadError(
        'COPY_POINT_IN_FORK_BRANCH',
        `node ${past.thread.currentNodeId} is a JOIN, which merges the branches its FORK started; copy from the FORK (or a node after the JOIN) instead`,
        past.thread.currentNodeId === undefined ? {} : { nodeId: past.thread.currentNodeId },
      );
    }
    // The source with every node result it can read, so the copy holds its own (seed 002).
    const source: Thread = past?.thread ?? {
      ...current,
      nodeResults: await stores.threads.getNodeResults(lineageOf(current), 'all'),
    };
    const { thread: copied, event } = copyThread(source, env, {
      id: `t-${randomUUID().replaceAll('-', '')}`,
    });
    // The output stays (seed 002); a copy from a step has the output the thread had before it.
    const { lastEnvelope: _lastEnvelope, globalWriters: _writers, endTime: _endTime, ...rest } = copied;
    const fromNodeId = past
      ? past.thread.currentNodeId
      : (copyOptions.fromNodeId ??
        (await waitingAt(current)) ??
        (await stoppedAt(current, copyOptions)) ??
        (await forkOfFailedJoin(current)) ??
        source.currentNodeId);
    // A fresh root: its run counts steps from 0 and owns its global scope (a fork child's copy
    // gets the root's globals, which the child itself does not store). Its journal starts with the
    // source's steps before the copy point (read through `copiedAtStep`, never copied); the source's
    // executions are not the copy's.
    const {
      lineage: _lineage,
      firstExecutionId: _first,
      continuations: _continuations,
      continuedAt: _at,
      [RUN_FROM_KEY]: _runFrom,
      // The copy's budget is the one its start gives it: unmarked, it reads its spend until then.
      noBudget: _noBudget,
      // A copy's edits are its own: a copy of it holds their effect, not the edits.
      [COPY_EDITS_KEY]: _edits,
      ...metadata
    } = rest.metadata;
    let thread: Thread = {
      ...rest,
      metadata: { ...metadata, copiedAtStep: past ? past.step - 1 : (current.step ?? 0) },
      step: 0,
      ...(fromNodeId === undefined ? {} : { currentNodeId: fromNodeId }),
      events: [event],
    };
    const sourceExecution = source.metadata.executionId;
    if (isForkChild && sourceExecution !== undefined) {
      const { rootThreadId } = await stores.executions.getExecution(sourceExecution);
      const root = (await stores.threads.getThread(rootThreadId)).thread;
      thread.variables = { ...thread.variables, global: structuredClone(root.variables.global) };
    }
    if (copyOptions.edits !== undefined && copyOptions.edits.length > 0) {
      thread = await withEdits(thread, current, copyOptions.edits, copyOptions);
    }
    if (copyOptions.dryRun) return thread;
    await stores.threads.createThread(thread);
    // Keeps what the copy reads of its source (and of the source's own source) from expiring.
    for (let from = copySourceOf(thread); from !== undefined; ) {
      await stores.threads.pinForCopy(from.threadId, from.step);
      const next = await stores.threads.getCopySource(from.threadId).catch(() => undefined);
      from = next === undefined ? undefined : copySourceOf(next.thread);
    }
    return thread;
  };

  /**
   * The copy with its edits checked, applied and recorded (`metadata.edits`, in the order given): state
   * edits on its variables and input, workflow edits after the ones it inherits (`metadata.workflowEdits`).
   */
  const withEdits = async (
    thread: Thread,
    source: Thread,
    edits: readonly CopyEdit[],
    copyOptions: CopyOptions,
  ): Promise<Thread> => {
    const stateEdits = edits.filter((edit): edit is StateEdit => !isWorkflowEdit(edit));
    const workflowEdits = edits.filter(isWorkflowEdit);
    if (workflowEdits.length > 0 && copyOptions.deployed && copyOptions.deployedWorkflow === undefined) {
      throw refusedEdit(
        'COPY_EDIT_NOT_DEPLOYABLE',
        "node config and profile edits on a deployed stack are checked against the workflow its state machine's definition holds, which could not be read: copy with --set or --input only, or change the workflow file and deploy it",
      );
    }
    const workflow =
      copyOptions.workflow ?? (copyOptions.deployed ? undefined : await recordedWorkflowOfLineage(source));
    const now = env.now();
    const recordedState = checkCopyEdits(
      thread,
      stateEdits,
      // A deployed stack's declarations are those its runs have; a local record there would be another's.
      copyOptions.declarations ?? workflow?.variables,
      now,
    );
    let edited: Thread = withCopyEdits(thread, recordedState);
    const inherited = workflowEditsOf(thread);
    let recordedWorkflow: ReturnType<typeof checkWorkflowEdits>['recorded'] = [];
    if (workflowEdits.length > 0 && copyOptions.deployedWorkflow !== undefined) {
      // On a stack: checked against its definition, applied by the handlers where each node runs.
      recordedWorkflow = checkDeployedWorkflowEdits(
        copyOptions.deployedWorkflow,
        inherited,
        workflowEdits,
        now,
      );
      await refuseDeployedCodeThatDoesNotCompile(copyOptions.deployedWorkflow, workflowEdits);
      edited = {
        ...edited,
        metadata: { ...edited.metadata, [WORKFLOW_EDITS_KEY]: [...inherited, ...recordedWorkflow] },
      };
    } else if (workflowEdits.length > 0) {
      if (workflow === undefined) {
        throw refusedEdit(
          'INVALID_COPY_EDIT',
          `node config and profile edits are checked against the workflow thread ${source.id} ran, and no local run of it records one here: copy a thread that ran on this machine (stepthread run), or from the console, which has the workflow file`,
        );
      }
      const checked = checkWorkflowEdits(workflow, inherited, workflowEdits, now);
      await refuseCodeThatDoesNotCompile(checked.codeSources, workflowEdits, checked.workflow);
      recordedWorkflow = checked.recorded;
      edited = {
        ...edited,
        metadata: { ...edited.metadata, [WORKFLOW_EDITS_KEY]: [...inherited, ...recordedWorkflow] },
      };
    }
    // In the order given: each kind's records come in its own order.
    const states = [...recordedState];
    const workflows = [...recordedWorkflow];
    const recorded: RecordedCopyEdit[] = edits.map((edit) =>
      isWorkflowEdit(edit) ? workflows.shift()! : states.shift()!,
    );
    return { ...edited, metadata: { ...edited.metadata, [COPY_EDITS_KEY]: recorded } };
  };

  /** The workflow `thread` ran with, as recorded locally: its own run's, else along its copy sources. */
  const recordedWorkflowOfLineage = async (thread: Thread): Promise<Workflow | undefined> => {
    const seen = new Set<string>();
    for (let at: Thread | undefined = thread; at !== undefined && !seen.has(at.id); ) {
      seen.add(at.id);
      const recorded = await recordedWorkflowOf(options.clients, at);
      if (recorded !== undefined) return recorded;
      const from = copySourceOf(at);
      at =
        from === undefined
          ? undefined
          : (await stores.threads.getCopySource(from.threadId).catch(() => undefined))?.thread;
    }
    return undefined;
  };

  /** RUN_CANCELLED for a run that was cancelled (or whose cancel is under way: its mark is there). */
  const refuseCancelled = async (executionId: string, thread: Thread): Promise<void> => {
    const cancelled =
      thread.status === 'CANCELLED'
        ? await marks.get(thread.id, { consistent: true }).then((mark) => mark ?? { reason: undefined })
        : isTerminalStatus(thread.status)
          ? undefined
          : await marks.get(thread.id, { consistent: true });
    if (cancelled === undefined) return;
    const why = cancelled.reason === undefined ? '' : ` (${cancelled.reason})`;
    throw new StepthreadError(
      'RUN_CANCELLED',
      `execution ${executionId} was cancelled${why} and cannot be resumed; to run it again, copy its thread (stepthread copy ${thread.id} --from <node>) and run the copy`,
    );
  };

  const cancel: LocalRuntime['cancel'] = (ref, cancelOptions = {}) =>
    cancelRun({ ...stores, marks, ...(publisher ? { events: publisher } : {}) }, ref, {
      ...(cancelOptions.reason === undefined ? {} : { reason: cancelOptions.reason }),
      env,
      stop: async (mark) => {
        cancellers.get(mark.executionId)?.(mark);
        await cancelOptions.stop?.(mark);
      },
    });

  const cancelMarkOf: LocalRuntime['cancelMarkOf'] = (rootThreadId) =>
    marks.get(rootThreadId, { consistent: true });

  return { stores, prepare, copyThread: copy, conversationOf, resumePlanOf, cancel, cancelMarkOf };
}

/**
 * An execution that failed while its root thread, which it runs, is still under way: the failure
 * was recorded nowhere (a Task failing at START: a copy's run from there, or the fail Task itself).
 * A thread another execution runs (a resume or copy start refused) is not this one's to end.
 */
function failedBeforeItsStep(
  execution: LocalExecutionResult,
  error: CodedError | undefined,
  thread: Thread,
  executionId: string,
): boolean {
  return (
    execution.status === 'FAILED' &&
    error !== undefined &&
    !isTerminalStatus(thread.status) &&
    thread.metadata.executionId === executionId
  );
}

/**
 * The workflow a thread's run was recorded with locally (run-registry.ts), if any: under its
 * execution, else its run's first (a run that continued records itself where it started).
 */
async function recordedWorkflowOf(clients: AwsClients, thread: Thread): Promise<Workflow | undefined> {
  const { executionId, firstExecutionId } = thread.metadata;
  for (const id of [executionId, firstExecutionId]) {
    if (typeof id !== 'string') continue;
    const run = await getLocalRun(clients, id);
    if (run !== undefined) return (await detailsOfRun(clients, run)).workflow;
  }
  return undefined;
}

/** CODE_SYNTAX_ERROR for an edited CODE node whose code the sandbox cannot compile. */
async function refuseCodeThatDoesNotCompile(
  codeSources: readonly CodeSource[],
  edits: readonly WorkflowEdit[],
  workflow: Workflow,
): Promise<void> {
  const codeNodes = new Set(
    edits.flatMap((edit) =>
      edit.kind === 'nodeConfig' &&
      workflow.nodes.some((node) => node.id === edit.nodeId && node.type === 'CODE')
        ? [edit.nodeId]
        : [],
    ),
  );
  if (codeNodes.size === 0) return;
  const { codeSyntaxErrors } = await import('../sandbox/syntax.ts');
  const errors = (await codeSyntaxErrors(codeSources)).filter(
    (error) => error.nodeId !== undefined && codeNodes.has(error.nodeId),
  );
  if (errors.length > 0) {
    throw new CopyEditRefused(
      errors.map((error) => ({
        ...error,
        message: `node ${error.nodeId} config code: ${error.message}`,
      })) as [CodedError, ...CodedError[]],
    );
  }
}

/** As refuseCodeThatDoesNotCompile, for the code a copy on a stack gives a deployed CODE node. */
async function refuseDeployedCodeThatDoesNotCompile(
  deployed: DeployedWorkflow,
  edits: readonly WorkflowEdit[],
): Promise<void> {
  const sources: CodeSource[] = edits.flatMap((edit) =>
    edit.kind === 'nodeConfig' &&
    edit.key === 'code' &&
    typeof edit.value === 'string' &&
    deployed.nodes.get(edit.nodeId)?.type === 'CODE'
      ? [{ code: edit.value, path: ['nodes', edit.nodeId, 'config', 'code'], nodeId: edit.nodeId }]
      : [],
  );
  if (sources.length === 0) return;
  const { codeSyntaxErrors } = await import('../sandbox/syntax.ts');
  const errors = await codeSyntaxErrors(sources);
  if (errors.length > 0) {
    throw new CopyEditRefused(
      errors.map((error) => ({
        ...error,
        message: `node ${error.nodeId} config code: ${error.message}`,
      })) as [CodedError, ...CodedError[]],
    );
  }
}

/**
 * INVALID_STATE_MACHINE when `workflow` lacks the workflow edits the thread was copied with (node
 * configs, profiles): run it with workflowForThread's workflow, or the copy would run unedited.
 */
function refuseUneditedWorkflow(workflow: Workflow, thread: Thread): void {
  if (workflowEditsOf(thread).length === 0) return;
  if (canonicalJson(workflowForThread(workflow, thread)) === canonicalJson(workflow)) return;
  throw new StepthreadError(
    'INVALID_STATE_MACHINE',
    `thread ${thread.id} was copied with node config or profile edits; prepare the workflow it runs with (workflowForThread) so they take effect`,
  );
}

/** `work`, unless the signal aborts first. */
async function untilAborted<T>(work: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (signal === undefined) return work;
  const aborted = new Promise<never>((_resolve, reject) => {
    if (signal.aborted) reject(signal.reason);
    else signal.addEventListener('abort', () => reject(signal.reason), { once: true });
  });
  return Promise.race([work, aborted]);
}

/** Why a local run stopped at an interaction, and how to answer it next time. */
export function inputRequiredMessage(interaction: Interaction): string {
  return `${waitingMessage(interaction)} and none was given: run in a terminal to answer it there, or pass --answers <file> with ${exampleAnswers(interaction)}`;
}
