/**
 * `stepthread inspect <executionId|threadId> [--steps all|A-B] [--last <n>] [--no-conversation]
 * [--all-conversations] [--json]`: every thread of the execution with its node runs (status,
 * duration, attempts; on a long thread the first and last ones, cli/step-window.ts) and child
 * threads, plus the conversation of the thread named (the root thread for an execution id; every
 * thread's with --all-conversations), whole or its last n messages.
 */
import type { Command } from 'commander';
import type { Message } from '../../engine/conversation/types.ts';
import { StepthreadError } from '../../engine/errors.ts';
import type { NodeStartedEvent, StepthreadEvent } from '../../engine/events.ts';
import { buildGraph } from '../../engine/graph/build.ts';
import { copyEditsOf, type RecordedCopyEdit } from '../../engine/thread/copy-edits.ts';
import { describeWorkflowEdit } from '../../engine/thread/copy-workflow-edits.ts';
import { isTerminalStatus } from '../../engine/thread/index.ts';
import type { ExecutionHistoryEntry, ModelUsage, NodeLogs, Thread } from '../../engine/thread/types.ts';
import {
  type CommandForm,
  commandLine,
  PLAIN_COMMAND_FORM,
  respondCommand,
  resumeCommand,
} from '../../functions/local/interaction-hints.ts';
import {
  detailsOfRun,
  getLocalRun,
  type RegistryStores,
  runnerGone,
} from '../../functions/local/run-registry.ts';
import { createLocalRuntime } from '../../functions/local/runtime.ts';
import type { TableRef } from '../../functions/stores/dynamo-items.ts';
import { executionChain, runsIn, threadsOfChain } from '../../functions/stores/execution-chain.ts';
import type { ExecutionRecord } from '../../functions/stores/execution-index.ts';
import type { Interaction } from '../../functions/stores/interaction-store.ts';
import {
  createStoredBytesReader,
  type StoredBytes,
  type StoredBytesReader,
} from '../../functions/stores/stored-bytes.ts';
import type { HistoryRange, JournalWindow, StepMeter } from '../../functions/stores/thread-store.ts';
import { isValueRef, type Slotted, type ValueRef } from '../../functions/stores/value-refs.ts';
import { hydrateAll, type ValueStore } from '../../functions/stores/value-store.ts';
import { type AwsCost, estimateAwsCost, nodeMetersOf, runMeters, threadsOfRun } from '../aws-cost.ts';
import { formatCodedError, visible } from '../format.ts';
import { type CliIo, EXIT } from '../io.ts';
import {
  codedOf,
  commandForm,
  type DataDirOption,
  NO_CACHE_OPTION_HELP,
  printErrors,
  STACK_OPTION_HELP,
  storeArguments,
  withStores,
} from '../local-session.ts';
import { terminalLogLines } from '../node-logs.ts';
import { costLines, type RunCost, runCostOf, usageText } from '../run-cost.ts';
import {
  FIRST_STEPS,
  LAST_STEPS,
  omittedRanges,
  parseSteps,
  rangesOf,
  type StepSelection,
} from '../step-window.ts';
import { inForkOrder, pathOrderOf, pathOrderOfForkSteps } from '../thread-order.ts';
import { formatBytes } from './prune.ts';

export interface InspectOptions extends DataDirOption {
  json?: boolean;
  /** The last n messages of each conversation shown (`--last <n>`); all by default. */
  last?: string;
  /** False with `--no-conversation`: no conversation shown. */
  conversation?: boolean;
  /** Every thread's conversation, not only the one inspected (`--all-conversations`). */
  allConversations?: boolean;
  /** `all`, or a range of steps (`100-200`); by default the first and last ones (step-window.ts). */
  steps?: string;
  /** Each thread's stored bytes (`--bytes`): reads every item of each thread. */
  bytes?: boolean;
  /** Each thread's events (`--events`): those of the steps listed, and those outside steps. */
  events?: boolean;
}

/** The steps of a thread that a report leaves out (`--steps`), and how to see them. */
export interface StepsNotShown {
  /** How many steps the thread has. */
  total: number;
  /** Each run of positions left out, and the index in `nodes` it would come before. */
  ranges: (HistoryRange & { atNode: number })[];
  /** The flag that shows every step. */
  showAll: '--steps all';
}

export interface NodeRun {
  nodeId: string;
  nodeType: string;
  /** The SUBGRAPH node it runs inside (innermost), when it is part of an inlined subgraph. */
  subgraphNodeId?: string;
  status: 'COMPLETED' | 'FAILED' | 'SKIPPED' | 'RUNNING';
  startedAt: string;
  endedAt?: string;
  durationMs?: number;
  attempt: number;
  /** The thread's step that recorded the run (what `copy --from <step>` takes); absent while it runs. */
  step?: number;
  /**
   * A copy's run recorded before the copy was made: `step` is its source's step number, which
   * `copy --from` on the copy does not take (a copy numbers its own steps from 1).
   */
  copied?: true;
  /** What a CODE node's code printed in this run (one over 1 MB stays its reference). */
  logs?: NodeLogs | ValueRef;
  /** An LLM node's model calls in this run: tokens, and their cost when the model has a price. */
  usage?: ModelUsage;
}

export interface ThreadReport {
  threadId: string;
  parentThreadId?: string;
  forkPathId?: string;
  copiedFrom?: string;
  /** A copy's THREAD_COPIED event (seed 002): its source, the copy, its workflow and when it was made. */
  copied?: {
    type: 'THREAD_COPIED';
    sourceThreadId: string;
    copyThreadId: string;
    workflowId: string;
    at: string;
  };
  /** A copy's edits before its first step (copy --set, --input), in the order they were applied. */
  edits?: RecordedCopyEdit[];
  status: string;
  currentNodeId?: string;
  startTime: string;
  endTime?: string;
  /** The values; one stored by reference over 1 MB stays its reference (`{"$stepthread:ref", bytes}`). */
  input?: unknown;
  output?: unknown;
  /** Each node's latest output on this thread (one over 1 MB stays its reference, as input does). */
  results?: Record<string, unknown>;
  /**
   * The thread's variables by scope (a fork child's global scope is its root's), as stored: `global`
   * and `thread` name → value, `loop` and `subgraph` a list of frames, innermost last. Empty scopes
   * are left out.
   */
  variables?: Record<string, unknown>;
  /** What the thread waits for: the open questions (USER_INTERACTION) asked on it. */
  waitingFor?: {
    interactionId: string;
    nodeId: string;
    type: string;
    message?: string;
    options?: readonly string[];
    requestedAt: string;
    deadline?: string;
    answerWith: string;
  }[];
  errors: Thread['errors'];
  nodes: NodeRun[];
  /** Absent when every step is in `nodes`. */
  stepsNotShown?: StepsNotShown;
  children: string[];
  messageCount: number;
  /**
   * What the thread keeps stored: its DynamoDB items as DynamoDB bills storage, and the S3 objects
   * it owns (shared ones count for the thread that wrote them: functions/stores/stored-bytes.ts).
   */
  storedBytes?: StoredBytes;
  /**
   * With `--events`: the thread's events in the order they were recorded (node lifecycle, hooks,
   * context operations, questions and answers, variable changes, …), those of the steps listed and
   * those recorded outside steps.
   */
  events?: StepthreadEvent[];
}

export interface InspectReport {
  executionId?: string;
  /** INTERRUPTED: stored as RUNNING, but the local process running it is gone (`resume` continues it). */
  executionStatus?: string;
  /** The command that resumes an interrupted run. */
  resume?: string;
  rootThreadId?: string;
  /**
   * A deployed execution: the state machine version it runs (pinned from its start), as Step
   * Functions describes it; absent locally and for one started on the state machine itself.
   */
  stateMachineVersion?: number;
  /** A run that continued in new executions (continue-as-new): all of them, first to last. */
  executions?: { executionId: string; status: string }[];
  /** What the whole run spent (all its threads and executions), and its budget. */
  cost?: RunCost;
  /** What the run costs on AWS, deployed: an estimate from its steps (cli/aws-cost.ts). */
  awsCost?: AwsCost;
  /** A cancelled run (`stepthread cancel`, the console's Stop): when, and the reason it was given. */
  cancelled?: { at: string; reason?: string };
  threads: ThreadReport[];
  /** The conversation of the thread inspected (the root thread for an execution id). */
  conversation: ConversationShown;
  /** With `--all-conversations`: every thread's, in the order of `threads`. */
  conversations?: ConversationShown[];
}

/** A thread's conversation as the report shows it. */
export interface ConversationShown {
  threadId: string;
  messages: Message[];
  /** With `--last`: how many earlier messages are left out (absent when none is). */
  omittedMessages?: number;
}

/** Which conversations a report shows, and how much of each. */
export interface ConversationChoice {
  /** The last this many messages of each; all when absent. */
  last?: number;
  /** Every thread's conversation (`conversations`), besides the one inspected. */
  all?: boolean;
}

/** `--last <n>`: a whole number from 1; INVALID_MESSAGE_COUNT otherwise. */
export function parseLast(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const count = /^\d+$/.test(value.trim()) ? Number(value.trim()) : Number.NaN;
  if (!(Number.isSafeInteger(count) && count >= 1)) {
    throw new StepthreadError(
      'INVALID_MESSAGE_COUNT',
      `--last takes how many of the last messages to show, a whole number from 1, got ${value} (--no-conversation shows none)`,
    );
  }
  return count;
}

/** The last `last` messages (all without it), with how many earlier ones are left out. */
function shownConversation(
  threadId: string,
  messages: Message[],
  last: number | undefined,
): ConversationShown {
  if (last === undefined || messages.length <= last) return { threadId, messages };
  return { threadId, messages: messages.slice(-last), omittedMessages: messages.length - last };
}

/**
 * Node runs from the thread's NODE_STARTED / NODE_COMPLETED / NODE_FAILED events, in order, each with
 * the step that recorded it: the next entry of `history` (the thread's steps, in order) for its node,
 * and that entry's console output (`logs`, at the same index).
 */
export function nodeRunsOf(
  events: readonly StepthreadEvent[],
  history: readonly ExecutionHistoryEntry[] = [],
  logs: readonly unknown[] = [],
  usage: readonly (ModelUsage | undefined)[] = [],
): NodeRun[] {
  return nodeRunsAt(events, history, logs, usage).runs;
}

/**
 * nodeRunsOf, with each run's index in `history` (undefined for a run no step recorded), which
 * places the steps a window left out among the runs.
 */
function nodeRunsAt(
  events: readonly StepthreadEvent[],
  history: readonly ExecutionHistoryEntry[],
  logs: readonly unknown[],
  usage: readonly (ModelUsage | undefined)[] = [],
): { runs: NodeRun[]; entries: (number | undefined)[] } {
  const runs: NodeRun[] = [];
  const entries: (number | undefined)[] = [];
  const indexOf = new Map<NodeRun, number>();
  const open = new Map<string, NodeRun>();
  let next = 0;
  const entryOf = (nodeId: string): number | undefined => {
    const at = history.findIndex((entry, index) => index >= next && entry.nodeId === nodeId);
    if (at < 0) return undefined;
    next = at + 1;
    return at;
  };
  for (const [index, event] of events.entries()) {
    if (event.type === 'NODE_STARTED') {
      const inside = subgraphOf(event.nodeId);
      const run: NodeRun = {
        nodeId: event.nodeId,
        nodeType: runTypeOf(events, index, event),
        ...(inside === undefined ? {} : { subgraphNodeId: inside }),
        status: 'RUNNING',
        startedAt: event.at,
        attempt: event.attempt ?? 1,
      };
      open.set(event.nodeId, run);
      indexOf.set(run, runs.length);
      runs.push(run);
      entries.push(undefined);
    } else if (event.type === 'NODE_COMPLETED' || event.type === 'NODE_FAILED') {
      const run = open.get(event.nodeId);
      if (run === undefined) continue;
      open.delete(event.nodeId);
      run.status = event.type === 'NODE_FAILED' ? 'FAILED' : event.status;
      run.endedAt = event.at;
      run.durationMs = Date.parse(event.at) - Date.parse(run.startedAt);
      const at = entryOf(event.nodeId);
      if (at === undefined) continue;
      run.step = history[at]!.step;
      entries[indexOf.get(run)!] = at;
      const printed = logs[at] as NodeRun['logs'];
      if (printed !== undefined) run.logs = printed;
      const used = usage[at];
      if (used !== undefined) run.usage = used;
    }
  }
  return { runs, entries };
}

/**
 * Where the positions a window left out go among `runs` (each run's history position, or undefined):
 * before the first run past them, else after the last run before them.
 */
function stepsNotShownOf(
  positions: readonly (number | undefined)[],
  shown: readonly number[],
  total: number,
): StepsNotShown | undefined {
  const ranges = omittedRanges(shown, total);
  if (ranges.length === 0) return undefined;
  return {
    total,
    ranges: ranges.map((range) => {
      const after = positions.findIndex((position) => position !== undefined && position > range.to);
      const before = positions.findLastIndex((position) => position !== undefined && position < range.from);
      return { ...range, atNode: after >= 0 ? after : before + 1 };
    }),
    showAll: '--steps all',
  };
}

/**
 * The SUBGRAPH a built node id sits in: author ids have no dots, so each dot in a built id is a
 * subgraph's prefix (`<subgraph id>.<author id>`, engine/graph/build.ts).
 */
export function subgraphOf(nodeId: string): string | undefined {
  const dot = nodeId.lastIndexOf('.');
  return dot < 0 ? undefined : nodeId.slice(0, dot);
}

/**
 * The type of the node `event` (`events[index]`) starts. An inlined subgraph's START and END
 * are recorded as type SUBGRAPH, like the SUBGRAPH node itself (engine/lifecycle.ts): the SUBGRAPH's
 * NODE_STARTED is followed at once by its START's, a node inside it; any other boundary is its END.
 */
export function runTypeOf(
  events: readonly StepthreadEvent[],
  index: number,
  event: NodeStartedEvent,
): string {
  if (event.nodeType !== 'SUBGRAPH') return event.nodeType;
  const next = events[index + 1];
  if (next?.type === 'NODE_STARTED' && subgraphOf(next.nodeId) === event.nodeId) return 'SUBGRAPH';
  const previous = events[index - 1];
  const opened =
    previous?.type === 'NODE_STARTED' &&
    previous.nodeType === 'SUBGRAPH' &&
    subgraphOf(event.nodeId) === previous.nodeId;
  return opened ? 'START' : 'END';
}

function variablesOf(thread: Thread): ThreadReport['variables'] {
  const scopes = Object.entries(thread.variables ?? {}).filter(
    ([, values]) => values !== null && typeof values === 'object' && Object.keys(values).length > 0,
  );
  return scopes.length === 0 ? undefined : Object.fromEntries(scopes);
}

/** The copy's own THREAD_COPIED event (a copy of a copy also reads its source's history). */
function copiedOf(thread: Thread, events: readonly StepthreadEvent[]): Pick<ThreadReport, 'copied'> {
  const event = events.findLast(
    (candidate) => candidate.type === 'THREAD_COPIED' && candidate.copyThreadId === thread.id,
  );
  return event?.type === 'THREAD_COPIED'
    ? {
        copied: {
          type: event.type,
          sourceThreadId: event.sourceThreadId,
          copyThreadId: event.copyThreadId,
          workflowId: event.workflowId,
          at: event.at,
        },
      }
    : {};
}

function reportOf(
  thread: Thread,
  { events, executionHistory, logs, usage, length, positions }: JournalWindow,
  all: readonly Thread[],
  messageCount: number,
  open: readonly Interaction[],
  answerWith: (interaction: Interaction) => string,
): ThreadReport {
  const { metadata } = thread;
  const variables = variablesOf(thread);
  const { runs, entries } = nodeRunsAt(events, executionHistory, logs, usage);
  // A copy's history starts with its source's steps: every position before its own.
  const inherited = metadata.copiedFrom ? length - (thread.step ?? 0) : 0;
  for (const [index, at] of entries.entries()) {
    if (at !== undefined && positions[at]! <= inherited) runs[index]!.copied = true;
  }
  const notShown = stepsNotShownOf(
    entries.map((at) => (at === undefined ? undefined : positions[at])),
    positions,
    length,
  );
  return {
    threadId: thread.id,
    ...(metadata.parentThreadId ? { parentThreadId: metadata.parentThreadId } : {}),
    ...(metadata.forkPathId ? { forkPathId: metadata.forkPathId } : {}),
    ...(metadata.copiedFrom ? { copiedFrom: metadata.copiedFrom } : {}),
    ...copiedOf(thread, events),
    ...(copyEditsOf(thread).length > 0 ? { edits: copyEditsOf(thread) } : {}),
    status: thread.status,
    ...(thread.currentNodeId ? { currentNodeId: thread.currentNodeId } : {}),
    startTime: thread.startTime,
    ...(thread.endTime ? { endTime: thread.endTime } : {}),
    ...(thread.input === undefined ? {} : { input: thread.input }),
    ...(thread.output === undefined ? {} : { output: thread.output }),
    ...(Object.keys(thread.nodeResults).length > 0
      ? {
          results: Object.fromEntries(
            Object.values(thread.nodeResults)
              .filter((result) => result.output !== undefined)
              .map((result) => [result.nodeId, result.output]),
          ),
        }
      : {}),
    ...(variables ? { variables } : {}),
    ...(open.length > 0
      ? {
          waitingFor: open.map((interaction) => ({
            interactionId: interaction.interactionId,
            nodeId: interaction.nodeId,
            type: interaction.interactionType,
            ...(interaction.message ? { message: interaction.message } : {}),
            ...(interaction.options ? { options: interaction.options } : {}),
            requestedAt: interaction.requestedAt,
            ...(interaction.deadline ? { deadline: interaction.deadline } : {}),
            answerWith: answerWith(interaction),
          })),
        }
      : {}),
    errors: thread.errors,
    nodes: runs,
    ...(notShown ? { stepsNotShown: notShown } : {}),
    children: all
      // A copy names its source as parent too (seed 002), and a fork branch's copy keeps its path id.
      .filter(
        (other) =>
          other.metadata.parentThreadId === thread.id &&
          other.metadata.forkPathId &&
          !other.metadata.copiedFrom,
      )
      .map((other) => other.id),
    messageCount,
  };
}

/**
 * Each fork path's place in its FORK, from the workflow a local run recorded (its first execution's
 * record). None where there is no record (a deployed run): the FORKs' outputs say it then.
 */
async function forkPathOrder(
  localRuns: RegistryStores | undefined,
  chain: readonly ExecutionRecord[],
): Promise<ReadonlyMap<string, number>> {
  const first = chain[0];
  if (localRuns === undefined || first === undefined) return new Map();
  try {
    const run = await getLocalRun(localRuns, first.executionId);
    const workflow = run === undefined ? undefined : (await detailsOfRun(localRuns, run)).workflow;
    return workflow === undefined ? new Map() : pathOrderOf(buildGraph(workflow).forks.values());
  } catch {
    // An order only: a record that cannot be read leaves the report as it is.
    return new Map();
  }
}

/** Statuses of a thread still under way; in an interrupted run, they stopped with its process. */
const IN_PROGRESS = new Set<string>(['RUNNING', 'PAUSED']);

/** The execution to resume when `execution` is RUNNING here but the process running it is gone. */
async function interruptedExecutionId(
  runtime: ReturnType<typeof createLocalRuntime>,
  localRuns: TableRef,
  execution: ExecutionRecord,
): Promise<string | undefined> {
  const gone = await runnerGone(execution, {
    localOf: (executionId) => getLocalRun(localRuns, executionId),
    executionOf: (executionId) => findExecution(runtime, executionId),
  });
  return gone ? execution.executionId : undefined;
}

/**
 * The command that answers a question: `respond` while a process waits on it; in a run whose
 * process is gone none does (respond would fail with INTERACTION_NOT_DELIVERED), so `resume` with
 * the answers up front — to every question the run stopped at, as `runs` gives it.
 * `storeArguments` (local-session.ts) makes it read the stores inspect read.
 */
export function answerCommand(
  interaction: Pick<Interaction, 'interactionId' | 'interactionType'>,
  form: CommandForm,
  interrupted: { executionId: string; waiting: readonly Interaction[] } | undefined,
): string {
  if (interrupted !== undefined) {
    return resumeCommand(interrupted.executionId, interrupted.waiting, form);
  }
  return respondCommand(interaction, form);
}

async function findExecution(
  runtime: ReturnType<typeof createLocalRuntime>,
  id: string,
): Promise<ExecutionRecord | undefined> {
  try {
    return await runtime.stores.executions.getExecution(id);
  } catch (error) {
    if (error instanceof StepthreadError && error.code === 'EXECUTION_NOT_FOUND') return undefined;
    throw error;
  }
}

/** What the commands a report prints need: the stores they read, and whether a run's process is gone. */
export interface CommandHints {
  /** ` --stack <name>` / ` --data-dir <dir>` as inspect was given them (storeArguments). */
  readonly storeArguments: string;
  /** How the user ran the CLI (cli/invocation.ts); default `stepthread`. */
  readonly cli?: string;
  /**
   * Local stores: the run records (run-registry.ts) that tell whether a run's process is gone, and
   * the workflow it ran (its FORKs' path order).
   */
  readonly localRuns?: RegistryStores;
}

/**
 * The report of an execution or thread. `steps` chooses the node runs listed (the CLI's default is
 * the first and last ones); the rest (results, variables, …) is whole either way.
 */
export async function buildInspectReport(
  runtime: ReturnType<typeof createLocalRuntime>,
  id: string,
  hints?: CommandHints,
  steps: StepSelection = 'all',
  shown: ConversationChoice = {},
  /**
   * `storedBytes`: each thread's (`--bytes`), read through this reader (each thread's items whole);
   * `events`: each thread's events (`--events`).
   */
  extra: { readonly storedBytes?: StoredBytesReader; readonly events?: boolean } = {},
): Promise<InspectReport> {
  const form: CommandForm = { cli: hints?.cli ?? 'stepthread', storeArguments: hints?.storeArguments ?? '' };
  let execution = await findExecution(runtime, id);
  let focus: Thread;
  if (execution) {
    focus = (await runtime.stores.threads.getThread(execution.rootThreadId)).thread;
  } else {
    try {
      focus = (await runtime.stores.threads.getThread(id)).thread;
    } catch (error) {
      if (error instanceof StepthreadError && error.code === 'THREAD_NOT_FOUND') {
        throw new StepthreadError(
          'EXECUTION_NOT_FOUND',
          `execution or thread ${id} not found (${commandLine(form, 'runs')} lists the executions here)`,
        );
      }
      throw error;
    }
    const executionId = focus.metadata.executionId;
    if (executionId) execution = await findExecution(runtime, executionId);
  }
  // Every execution of the run: threads created after a continuation are listed under later ones.
  let chain = execution ? await executionChain(runtime.stores.executions, execution) : [];
  if (!runsIn(focus, chain)) {
    // A copy not run yet keeps its source's execution id: that run is its source's, not the copy's.
    execution = undefined;
    chain = [];
  }
  const listed = (await threadsOfChain(runtime.stores.threads, chain)).map((entry) => entry.thread);
  // The index is eventually consistent: make sure the focus thread is there, and keep a stable order.
  const rootId = execution?.rootThreadId;
  // Fork children in their FORK's path order (they start in the same millisecond).
  const unordered = [focus, ...listed.filter((thread) => thread.id !== focus.id)];
  const recorded = await forkPathOrder(hints?.localRuns, chain);
  const threads = inForkOrder(
    unordered,
    rootId,
    // A deployed run (or one whose record is gone): its FORKs' own steps say their paths' order.
    recorded.size > 0
      ? recorded
      : await pathOrderOfForkSteps(unordered, (threadId, range) =>
          runtime.stores.threads.readSteps(threadId, range),
        ),
  );
  const conversations = new Map<string, Message[]>();
  for (const thread of threads) conversations.set(thread.id, await runtime.conversationOf(thread));
  // Events and results live in the threads' step records (status changes outside steps: the head).
  const journals = new Map<string, JournalWindow>();
  const meters = new Map<string, StepMeter[]>();
  for (const [i, thread] of threads.entries()) {
    // Only the steps shown are read: a long thread costs what is printed of it.
    const journal = await runtime.stores.threads.readJournal(thread.id, {
      window: (length) => rangesOf(steps, length),
    });
    journals.set(thread.id, { ...journal, logs: await withLogsRead(runtime.stores.values, journal.logs) });
    // A copy's results include its source's up to the copy (seed 002); the AWS estimate's meters
    // come from the same pass over the steps.
    const read = await runtime.stores.threads.readStepResultsAndMeters(thread.id);
    const nodeResults = read.results;
    meters.set(thread.id, read.meters);
    threads[i] = await withValuesRead(runtime.stores.values, { ...thread, nodeResults });
  }
  const stored = await extra.storedBytes?.storedBytes(threads);
  const interruptedId =
    execution && hints?.localRuns
      ? await interruptedExecutionId(runtime, hints.localRuns, execution)
      : undefined;
  const open = new Map<string, Interaction[]>();
  for (const thread of threads) {
    if (isTerminalStatus(thread.status) || runtime.stores.interactions === undefined) continue;
    const asked = await runtime.stores.interactions.listOpenOfThread(thread.id);
    if (asked.length > 0) open.set(thread.id, asked);
  }
  const interrupted =
    interruptedId === undefined
      ? undefined
      : { executionId: interruptedId, waiting: [...open.values()].flat() };
  const resume = interrupted && resumeCommand(interrupted.executionId, interrupted.waiting, form);
  return {
    ...(execution
      ? {
          executionId: execution.executionId,
          executionStatus: resume ? 'INTERRUPTED' : execution.status,
          ...(resume ? { resume } : {}),
          rootThreadId: execution.rootThreadId,
          ...(chain.length > 1
            ? { executions: chain.map(({ executionId, status }) => ({ executionId, status })) }
            : {}),
          cost: runCostOf(await runtime.stores.spend?.get(execution.rootThreadId)),
          ...awsCostOf(execution.rootThreadId, threads, meters, chain.length),
          ...(execution.status === 'CANCELLED' ? await cancelledOf(runtime, execution.rootThreadId) : {}),
        }
      : {}),
    threads: threads.map((thread) => {
      const report = reportOf(
        thread,
        journals.get(thread.id) ?? {
          events: [],
          executionHistory: [],
          logs: [],
          usage: [],
          length: 0,
          positions: [],
        },
        threads,
        conversations.get(thread.id)?.length ?? 0,
        open.get(thread.id) ?? [],
        (interaction) => answerCommand(interaction, form, interrupted),
      );
      const storedBytes = stored?.get(thread.id);
      const withBytes = {
        ...report,
        ...(storedBytes ? { storedBytes } : {}),
        ...(extra.events ? { events: journals.get(thread.id)?.events ?? [] } : {}),
      };
      // Its process gone, a thread it left in progress goes no further until resumed.
      return resume && IN_PROGRESS.has(report.status) ? { ...withBytes, status: 'INTERRUPTED' } : withBytes;
    }),
    conversation: shownConversation(focus.id, conversations.get(focus.id) ?? [], shown.last),
    ...(shown.all
      ? {
          conversations: threads.map((thread) =>
            shownConversation(thread.id, conversations.get(thread.id) ?? [], shown.last),
          ),
        }
      : {}),
  };
}

/**
 * The run's AWS side, from the steps of its threads (`listed`: the heads of every thread of the run;
 * `meters`: each one's own steps, as read for its results).
 */
function awsCostOf(
  rootThreadId: string,
  listed: readonly Thread[],
  meters: ReadonlyMap<string, readonly StepMeter[]>,
  executions: number,
): Pick<InspectReport, 'awsCost'> {
  const root = listed.find((thread) => thread.id === rootThreadId);
  if (root === undefined) return {};
  const own = threadsOfRun(root, listed);
  const nodes = nodeMetersOf(own.flatMap((thread) => meters.get(thread.id) ?? []));
  return { awsCost: estimateAwsCost(runMeters(root, own, nodes, executions)) };
}

/** A cancelled run's `cancelled`, from its cancel mark (none: a run stopped some other way). */
async function cancelledOf(
  runtime: ReturnType<typeof createLocalRuntime>,
  rootThreadId: string,
): Promise<Pick<InspectReport, 'cancelled'>> {
  const mark = await runtime.cancelMarkOf(rootThreadId);
  if (mark === undefined) return {};
  return { cancelled: { at: mark.at, ...(mark.reason === undefined ? {} : { reason: mark.reason }) } };
}

/**
 * A value stored by reference over this many bytes is not read: it stays its reference, shown as its
 * size, so inspecting a run never loads more than this per value.
 */
export const INSPECT_MAX_READ_BYTES = 1024 * 1024;

/**
 * The thread with its large values (input, output, variables, node outputs) read back from the value
 * store, as the dev console's thread page shows them: one parallel round of reads.
 */
async function withValuesRead(store: ValueStore | undefined, thread: Thread): Promise<Thread> {
  const results = Object.values(thread.nodeResults);
  const slots: Slotted[] = [thread, ...results.map((result) => ({ output: result.output }))];
  const { data } = await hydrateAll(store, slots, { maxBytes: INSPECT_MAX_READ_BYTES });
  const [{ input, output, variables }, ...outputs] = data as [Thread, ...Slotted[]];
  const nodeResults = Object.fromEntries(
    results.map((result, i) => [
      result.nodeId,
      result.output === undefined ? result : { ...result, output: outputs[i]!.output },
    ]),
  );
  return { ...thread, input, output, variables, nodeResults };
}

/** Console output stored by reference read back (one parallel round), as values are. */
async function withLogsRead(store: ValueStore | undefined, logs: readonly unknown[]): Promise<unknown[]> {
  const { data } = await hydrateAll(
    store,
    logs.map((entry) => ({ logs: entry })),
    { maxBytes: INSPECT_MAX_READ_BYTES },
  );
  return data.map((entry) => entry.logs);
}

/** Longest JSON shown for a value; longer ones are cut with their size. */
const PREVIEW_CHARS = 400;

/** A value for a terminal: short JSON as is, long JSON cut, a reference not read (over 1 MB) as its size. */
export function previewValue(value: unknown): string {
  if (isValueRef(value)) {
    return `(${value.bytes.toLocaleString('en-US')} bytes, stored by reference; inspect reads values up to ${INSPECT_MAX_READ_BYTES.toLocaleString('en-US')} bytes)`;
  }
  const json = JSON.stringify(value) ?? 'undefined';
  if (json.length <= PREVIEW_CHARS) return json;
  return `${json.slice(0, PREVIEW_CHARS)}… (${Buffer.byteLength(json).toLocaleString('en-US')} bytes)`;
}

/** A run's console output under its line: the lines, or the size of output too large to read. */
function runLogLines(logs: NodeRun['logs']): string[] {
  if (logs === undefined) return [];
  if (isValueRef(logs)) return [`(console output: ${previewValue(logs)})`];
  return terminalLogLines(logs);
}

/** The line that stands for steps left out: how many, which, and the flags that show them. */
function notShownLine({ from, to }: HistoryRange, total: number): string {
  const count = to - from + 1;
  const which = from === to ? `step ${from}` : `steps ${from}-${to}`;
  const these = from === to ? `${from}` : `${from}-${to}`;
  return `… ${count.toLocaleString('en-US')} of ${total.toLocaleString('en-US')} steps not shown (${which}): --steps ${these} shows them, --steps all every step`;
}

/** What a copy not run yet is: its steps so far are its source's, whose run `inspect` shows. */
function notRunLine(copy: ThreadReport, form: CommandForm): string {
  const source = `${commandLine(form, `inspect ${copy.copiedFrom}`)} shows its source's run`;
  // run --thread refuses a branch's copy (COPY_POINT_IN_FORK_BRANCH): its FORK runs a branch.
  if (copy.forkPathId) return `a fork branch's copy, which does not run on its own; ${source}`;
  return `not run yet: ${commandLine(form, `run <workflow> --thread ${copy.threadId}`)} runs it; ${source}`;
}

/**
 * `form`: how the commands the report suggests are written (default: `stepthread`, no store
 * arguments); `conversations`: false leaves them out (`--no-conversation`).
 */
export function printReport(
  report: InspectReport,
  io: CliIo,
  form = PLAIN_COMMAND_FORM,
  conversations = true,
): void {
  if (report.executionId) {
    const version = report.stateMachineVersion === undefined ? '' : `  version ${report.stateMachineVersion}`;
    io.stdout(
      `execution ${report.executionId}  ${report.executionStatus}${version}  root thread ${report.rootThreadId}\n`,
    );
  }
  if (report.resume) io.stdout(`  its process is gone; resume with: ${report.resume}\n`);
  if (report.executions) {
    const run = report.executions.map(({ executionId, status }) => `${executionId} (${status})`);
    io.stdout(`run in ${run.length} executions: ${run.join(' → ')}\n`);
  }
  if (report.cancelled) {
    const { at, reason } = report.cancelled;
    io.stdout(`cancelled at ${at}${reason === undefined ? '' : `: ${reason}`}\n`);
  }
  for (const line of report.cost ? costLines(report.cost, report.awsCost) : []) io.stdout(`${line}\n`);
  for (const thread of report.threads) {
    const path =
      thread.forkPathId && !thread.copiedFrom
        ? `  path ${thread.forkPathId} of ${thread.parentThreadId}`
        : '';
    const copy = thread.copiedFrom
      ? `  copy of ${thread.copiedFrom}${thread.copied ? ` (THREAD_COPIED ${thread.copied.at})` : ''}`
      : '';
    io.stdout(
      `\nthread ${thread.threadId}  ${thread.status}${path}${copy}  (${thread.messageCount} messages)\n`,
    );
    for (const edit of thread.edits ?? []) io.stdout(`  ${editLine(edit)}\n`);
    if (thread.copiedFrom && report.executionId === undefined) io.stdout(`  ${notRunLine(thread, form)}\n`);
    // `step 1234` and longer still leave a space before the status.
    const stepWidth = Math.max(9, ...thread.nodes.map((run) => `step ${run.step ?? ''}`.length + 1));
    const notShown = thread.stepsNotShown;
    const printNotShown = (atNode: number) => {
      for (const range of notShown?.ranges ?? []) {
        if (range.atNode === atNode) io.stdout(`  ${notShownLine(range, notShown!.total)}\n`);
      }
    };
    for (const [index, run] of thread.nodes.entries()) {
      printNotShown(index);
      const duration = run.durationMs === undefined ? '' : `  ${run.durationMs} ms`;
      const attempt = run.attempt > 1 ? `  attempt ${run.attempt}` : '';
      // A copied run's number is its source's: `copy --from` on this thread would not take it.
      const step = `${run.copied ? 'copied' : run.step === undefined ? '' : `step ${run.step}`}`.padEnd(
        stepWidth,
      );
      const type = run.subgraphNodeId ? `${run.nodeType} in SUBGRAPH ${run.subgraphNodeId}` : run.nodeType;
      const usage = run.usage ? `  ${usageText(run.usage)}` : '';
      io.stdout(`  ${step}${run.status.padEnd(9)} ${run.nodeId} (${type})${duration}${attempt}${usage}\n`);
      for (const line of runLogLines(run.logs)) io.stdout(`           │ ${line}\n`);
    }
    printNotShown(thread.nodes.length);
    if (thread.events) {
      io.stdout(`  events (${thread.events.length}):\n`);
      for (const event of thread.events) io.stdout(`    ${eventLine(event)}\n`);
    }
    if (thread.children.length > 0) io.stdout(`  children: ${thread.children.join(', ')}\n`);
    for (const error of thread.errors) io.stdout(`  error: ${formatCodedError(error)}\n`);
    if (thread.storedBytes) io.stdout(`  ${storedBytesLine(thread.storedBytes)}\n`);
    if (thread.input !== undefined) io.stdout(`  input: ${previewValue(thread.input)}\n`);
    for (const [scope, values] of Object.entries(thread.variables ?? {})) {
      for (const [name, value] of Object.entries(values as object)) {
        io.stdout(`  ${scope} ${name} = ${previewValue(value)}\n`);
      }
    }
    for (const waiting of thread.waitingFor ?? []) {
      const asked = waiting.message ? ` "${waiting.message}"` : '';
      io.stdout(`  waiting for ${waiting.type} at ${waiting.nodeId}${asked} since ${waiting.requestedAt}\n`);
      io.stdout(`    answer with: ${waiting.answerWith}\n`);
    }
    for (const [nodeId, value] of Object.entries(thread.results ?? {})) {
      io.stdout(`  result ${nodeId}: ${previewValue(value)}\n`);
    }
    if (thread.output !== undefined) io.stdout(`  output: ${previewValue(thread.output)}\n`);
  }
  if (!conversations) return;
  for (const conversation of report.conversations ?? [report.conversation]) {
    printConversation(conversation, report, io);
  }
  if (report.conversations === undefined) {
    const others = report.threads.filter(
      (thread) => thread.threadId !== report.conversation.threadId && thread.messageCount > 0,
    );
    if (others.length > 0) {
      const inspect = commandLine(form, `inspect ${others[0]!.threadId}`);
      const which =
        others.length === 1 ? 'thread has a conversation of its' : 'threads have conversations of their';
      io.stdout(
        `\n${others.length} other ${which} own: ${inspect} shows ${others.length === 1 ? 'it' : 'the first'}, --all-conversations every one\n`,
      );
    }
  }
}

/**
 * One event on one line: its type, its node, then its other fields (`hookType=BEFORE_EXECUTE
 * eventName=audit payload={"x":1}`); the thread, workflow and time are the same for a thread's events
 * or in `--json`.
 */
export function eventLine(event: StepthreadEvent): string {
  const { type, threadId: _thread, workflowId: _workflow, at: _at, ...rest } = event;
  const { nodeId, ...fields } = rest as { nodeId?: string } & Record<string, unknown>;
  const details = Object.entries(fields)
    .filter(([, value]) => value !== undefined)
    .map(([key, value]) => `${key}=${typeof value === 'string' ? value : previewValue(value)}`);
  return [type, ...(nodeId === undefined ? [] : [nodeId]), ...details].join(' ');
}

/** `stored 12.4 KB: 31 items (10.2 KB) in DynamoDB, 3 objects (2.2 KB) in S3`. */
export function storedBytesLine(stored: StoredBytes): string {
  const items = `${stored.items} item${stored.items === 1 ? '' : 's'}`;
  const objects = `${stored.objects} object${stored.objects === 1 ? '' : 's'}`;
  return `stored ${formatBytes(stored.bytes)}: ${items} (${formatBytes(stored.itemBytes)}) in DynamoDB, ${objects} (${formatBytes(stored.objectBytes)}) in S3`;
}

/** `conversation of <thread>` (with the fork path it runs), a line for the messages left out, then the messages. */
function printConversation(conversation: ConversationShown, report: InspectReport, io: CliIo): void {
  const thread = report.threads.find((candidate) => candidate.threadId === conversation.threadId);
  const path =
    thread?.forkPathId && !thread.copiedFrom
      ? ` (path ${thread.forkPathId} of ${thread.parentThreadId})`
      : '';
  io.stdout(`\nconversation of ${conversation.threadId}${path}:\n`);
  const omitted = conversation.omittedMessages;
  if (omitted !== undefined) {
    const total = omitted + conversation.messages.length;
    io.stdout(
      `  … ${omitted.toLocaleString('en-US')} earlier message${omitted === 1 ? '' : 's'} of ${total.toLocaleString('en-US')} not shown (--last ${conversation.messages.length})\n`,
    );
  }
  for (const message of conversation.messages) {
    for (const line of messageLines(message)) io.stdout(`  ${line}\n`);
  }
}

/** Longest tool-call arguments shown; longer ones are cut with their size. */
const ARGUMENTS_CHARS = 200;

/**
 * A message for a terminal: `[role] content`; an assistant's tool calls each on a line of their own
 * under it (name, compact arguments, call id), and a tool result led by the tool it answers and the
 * call, marked when it told the model of an error (the tool loop's `Error: ` results).
 */
export function messageLines(message: Message): string[] {
  if (message.role === 'tool') {
    const failed = message.content.startsWith('Error: ') ? ', failed' : '';
    const call = message.toolCallId ? ` ${message.toolCallId}` : '';
    return [`[tool result${message.name ? ` of ${message.name}` : ''}${call}${failed}] ${message.content}`];
  }
  const calls = (message.toolCalls ?? []).map((call) => {
    const args = JSON.stringify(call.arguments) ?? 'undefined';
    const shown =
      args.length <= ARGUMENTS_CHARS
        ? args
        : `${args.slice(0, ARGUMENTS_CHARS)}… (${Buffer.byteLength(args).toLocaleString('en-US')} bytes)`;
    return `  → tool call ${call.name}(${shown}) ${call.id}`;
  });
  return [`[${message.role}] ${message.content}`, ...calls];
}

export async function runInspect(id: string, options: InspectOptions, io: CliIo): Promise<number> {
  let steps: StepSelection;
  let last: number | undefined;
  try {
    steps = parseSteps(options.steps);
    last = parseLast(options.last);
  } catch (error) {
    printErrors(io, `cannot inspect ${id}`, [codedOf(error)]);
    return EXIT.usage;
  }
  const showConversation = options.conversation !== false;
  if (!showConversation && (options.allConversations || last !== undefined)) {
    io.stderr(
      `stepthread: USAGE_ERROR: --no-conversation does not go with ${options.allConversations ? '--all-conversations' : '--last'} (it shows no conversation)\n`,
    );
    return EXIT.usage;
  }
  return withStores(
    { ...options, mustExist: true },
    io,
    (session) => (session ? `cannot inspect ${id} (${session.location})` : 'cannot open the stores'),
    async (session) => {
      const runtime = createLocalRuntime({ clients: session.clients });
      const form = commandForm(io, storeArguments(options));
      const built = await buildInspectReport(
        runtime,
        id,
        {
          storeArguments: form.storeArguments,
          cli: form.cli,
          // Only a local run has a process that may be gone.
          ...(session.dataDir === undefined ? {} : { localRuns: session.clients }),
        },
        steps,
        { ...(last === undefined ? {} : { last }), ...(options.allConversations ? { all: true } : {}) },
        {
          ...(options.bytes
            ? { storedBytes: createStoredBytesReader(session.clients, session.clients) }
            : {}),
          ...(options.events ? { events: true } : {}),
        },
      );
      const report = session.dataDir === undefined ? await withVersion(built, options, io) : built;
      if (options.json) {
        const { conversation, ...rest } = report;
        io.stdout(`${JSON.stringify(showConversation ? report : rest, null, 2)}\n`);
      } else {
        printReport(report, io, form, showConversation);
      }
      return EXIT.ok;
    },
  );
}

/**
 * A deployed execution's report with the state machine version it runs (DescribeExecution, which the
 * operator policy allows); unchanged when Step Functions cannot say (an endpoint without it).
 */
async function withVersion(
  report: InspectReport,
  options: InspectOptions,
  io: CliIo,
): Promise<InspectReport> {
  if (!report.executionId?.startsWith('arn:')) return report;
  const [{ deployedSfn }, { describeDeployedExecution }] = await Promise.all([
    import('./start.ts'),
    import('../deployed/step-functions.ts'),
  ]);
  // `--stack` alone means AWS itself, as for the other commands.
  const env = io.env ?? process.env;
  const sfn = deployedSfn(
    options.stack === undefined ? io : { ...io, env: { STEPTHREAD_TARGET: 'aws', ...env } },
    {},
  );
  if (sfn === undefined) return report;
  try {
    const described = await describeDeployedExecution(sfn, report.executionId);
    const version = described?.stateMachineVersion;
    if (version === undefined) return report;
    const { executionId, executionStatus, ...rest } = report;
    return {
      executionId,
      ...(executionStatus ? { executionStatus } : {}),
      stateMachineVersion: version,
      ...rest,
    };
  } catch {
    return report;
  }
}

export function registerInspect(program: Command, io: CliIo, setExit: (code: number) => void): void {
  program
    .command('inspect')
    .description("show an execution's threads, node runs and child threads, and a thread's conversation")
    .argument('<id>', 'an execution id or a thread id')
    .option(
      '--steps <which>',
      `node runs listed per thread: all, or a range such as 100-200 (default: the first ${FIRST_STEPS} and last ${LAST_STEPS})`,
    )
    .option('--last <n>', 'show the last n messages of a conversation (default: all of them)')
    .option('--no-conversation', 'show no conversation, only the threads and their node runs')
    .option(
      '--all-conversations',
      "show every thread's conversation (fork branches and list items), not only the one inspected",
    )
    .option(
      '--bytes',
      "show each thread's stored bytes: its DynamoDB items and the S3 objects it owns (reads all of its items)",
    )
    .option(
      '--events',
      "show each thread's events (node lifecycle, hooks, context operations, questions, …) of the steps listed",
    )
    .option('--json', 'print the report as JSON')
    .option('--data-dir <dir>', 'local data directory (default: $STEPTHREAD_DATA_DIR or ./.stepthread)')
    .option('--stack <name>', STACK_OPTION_HELP)
    .option('--no-cache', NO_CACHE_OPTION_HELP)
    .action(async (id: string, options: InspectOptions) => {
      setExit(await runInspect(id, options, io));
    });
}

/**
 * One edit a copy was made with, as `copy --set`, `--input`, `--node-config` or `--profile` would give
 * it (long values cut).
 */
function editLine(edit: RecordedCopyEdit): string {
  const json = JSON.stringify(edit.value) ?? 'undefined';
  const value = json.length > 120 ? `${json.slice(0, 119)}…` : json;
  const what =
    edit.kind === 'input'
      ? `input = ${value}`
      : edit.kind === 'variable'
        ? `${edit.scope} variable ${edit.name} = ${value}`
        : `${describeWorkflowEdit(edit)} = ${value}`;
  return `edited before its first step: ${visible(what)} (${edit.at})`;
}
