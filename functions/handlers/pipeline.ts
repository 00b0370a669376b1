/**
 * The steps every node handler shares (runtime-design.md, "Handler contract"):
 *
 * 1. load the thread — one consistent GetItem, or one BatchGet with the root thread when the thread
 *    is a fork child (the root owns the global variable scope);
 * 2. a retry of a step that already landed (`thread.step > envelope.step`) replays the stored
 *    envelope (and re-runs the step's idempotent after-commit effects) without running the node;
 * 3. read the conversation only for nodes that read it;
 * 4. run the node through executeNodeLifecycle;
 * 5. one S3 write when messages were appended (content-addressed: a retry writes the same key);
 * 6. one conditional UpdateItem on the thread — the commit point;
 * 7. publish the events it recorded (best effort; a replay publishes them again: at least once);
 * 8. return the next envelope.
 *
 * A node failure is committed like a success (result, error, history) and then thrown as
 * `stepthread.NodeFailed`; a retry of that step throws it again.
 */
import {
  type ConversationView,
  openConversation,
  type TokenUsage,
  withLogId,
} from '../../engine/conversation/index.ts';
import { type CodedError, StepthreadError } from '../../engine/errors.ts';
import type { StepthreadEvent } from '../../engine/events.ts';
import { nodeReferences } from '../../engine/expression/index.ts';
import { executeNodeLifecycle, type NodeLogicResult } from '../../engine/lifecycle.ts';
import { buildExpressionScope, type ExpressionScope } from '../../engine/scope.ts';
import { workflowEditsOf } from '../../engine/thread/copy-workflow-edits.ts';
import {
  deepCopy,
  isTerminalStatus,
  lineageOf,
  maxStepsExceeded,
  transitionThread,
} from '../../engine/thread/index.ts';
import { withNodeOverlay } from '../../engine/thread/node-overlay.ts';
import type {
  Envelope,
  ModelUsage,
  NodeLogs,
  NodeResult,
  Thread,
  ThreadMetadata,
  ToolCallCounts,
  Variables,
} from '../../engine/thread/types.ts';
import { publishCommitted } from '../events/publisher.ts';
import { reportBranch } from '../nodes/branch-report.ts';
import { createItemThread } from '../nodes/map-items.ts';
import { sameJson } from '../stores/canonical-json.ts';
import type { ItemKey } from '../stores/table.ts';
import type {
  AlsoRead,
  StepRecord,
  StepState,
  ThreadChange,
  ThreadOptionalField,
  VersionedThread,
} from '../stores/thread-store.ts';
import {
  createSpiller,
  INLINE_VALUE_BYTES,
  mapRecord,
  mapSlots,
  type Slotted,
  type Spiller,
  type ValueRef,
} from '../stores/value-refs.ts';
import { hydrateAll, type ValueStore } from '../stores/value-store.ts';
import type { HandlerDeps } from './deps.ts';
import { isTransient } from './errors.ts';
import {
  contentionWaitMs,
  GLOBAL_WRITE_PATIENCE_MS,
  GlobalsChanged,
  globalsContended,
} from './global-contention.ts';
import { withNodeBudget } from './node-budget.ts';
import { subgraphBoundaryOf, subgraphsEntered } from './subgraph-lifecycle.ts';
import type { IncomingEnvelope, TaskEvent, TaskNode } from './task.ts';
import { nodeFailed } from './task.ts';

/** Fields a node may set on the next envelope. */
export type EnvelopeExtras = Pick<Envelope, 'route' | 'loop' | 'fork' | 'history'>;

export interface LoadedThread {
  /** With the root's global scope attached when it is a fork child. */
  readonly thread: Thread;
  readonly version: number;
  /** The root thread as stored (values by reference), when `thread` is not the root. */
  readonly root?: VersionedThread;
  /** The stored head's size in JSON bytes, large values counted as their references. */
  readonly headBytes: number;
  /** References of the values loaded (hash → reference), so values that did not change keep them. */
  readonly known: ReadonlyMap<string, ValueRef>;
}

/** What `loadThread` read besides heads (its `also`), in the order asked. */
export interface ReadWith {
  readonly steps: readonly (StepRecord | undefined)[];
  readonly items: readonly (Record<string, unknown> | undefined)[];
}

export function isRootThread(envelope: Pick<Envelope, 'threadId' | 'rootThreadId'>): boolean {
  return envelope.threadId === envelope.rootThreadId;
}

/** The node results `node` can read (`{{nodes.<id>}}`), by the static references in its config. */
export function neededNodeResults(
  node: Pick<TaskNode, 'config' | 'hooks' | 'tools' | 'nodeAliases'>,
): readonly string[] | 'all' {
  const references = nodeReferences({ config: node.config, hooks: node.hooks, tools: node.tools });
  if (references === 'all') return 'all';
  const aliases = node.nodeAliases ?? {};
  return [...references].flatMap((reference) =>
    Object.hasOwn(aliases, reference) ? (aliases[reference] ?? []) : [reference],
  );
}

/**
 * Loads the envelope's thread: 1 GetItem for the root, 1 BatchGetItem (thread + root + extras) for a
 * child; then, when `nodes` names any, one BatchGetItem (a Query per lineage thread for 'all') for
 * the node results it reads. Extras come with their own results when `extraResults` names any: those
 * nodes' (a BatchGetItem per extra), or 'all' (a Query per extra). `also`: step records and items
 * read in the heads' BatchGetItem (a root alone is then read by one too), returned as `with`.
 */
export async function loadThread(
  deps: HandlerDeps,
  envelope: ThreadEnvelope,
  extraIds: readonly string[] = [],
  reads: {
    nodes?: readonly string[] | 'all';
    extraResults?: readonly string[] | 'all';
    extrasMayBeMissing?: boolean;
    also?: AlsoRead;
  } = {},
): Promise<LoadedThread & { extra: VersionedThread[]; with: ReadWith }> {
  const loaded = await loadHeads(deps, envelope, extraIds, reads.extrasMayBeMissing ?? false, reads.also);
  const { nodes = [] } = reads;
  const [results, extraResults] = await Promise.all([
    nodes === 'all' || nodes.length > 0 ? deps.threads.getNodeResults(lineageOf(loaded.thread), nodes) : {},
    reads.extraResults === 'all' || (reads.extraResults?.length ?? 0) > 0
      ? Promise.all(
          loaded.extra.map(({ thread }) => deps.threads.getNodeResults([thread.id], reads.extraResults!)),
        )
      : [],
  ]);
  // Large values come back from S3 in one parallel round: the thread's, its related threads', and
  // the outputs of the results they read.
  const [own, ...extras] = await Promise.all([
    hydrateThread(deps, loaded.thread, results),
    ...loaded.extra.map((entry, i) => hydrateThread(deps, entry.thread, extraResults[i])),
  ]);
  const known = new Map([own!, ...extras].flatMap((hydrated) => [...hydrated.known]));
  return {
    ...loaded,
    known,
    thread: own!.thread,
    extra: loaded.extra.map((entry, i) => ({ ...entry, thread: extras[i]!.thread })),
  };
}

/** A thread with its values (and those of `results`, which become its nodeResults) in place. */
async function hydrateThread(
  deps: HandlerDeps,
  thread: Thread,
  results: Record<string, NodeResult> | undefined,
): Promise<{ thread: Thread; known: ReadonlyMap<string, ValueRef> }> {
  const list = Object.values(results ?? {});
  const { data, known } = await hydrateAll<Slotted>(deps.values, [thread, ...(list as Slotted[])]);
  const [hydrated, ...outputs] = data as [Thread, ...NodeResult[]];
  const nodeResults: Record<string, NodeResult> = {};
  for (const result of outputs) {
    // defineProperty: a node id such as `__proto__` stays plain data.
    Object.defineProperty(nodeResults, result.nodeId, {
      value: result,
      enumerable: true,
      writable: true,
      configurable: true,
    });
  }
  return { thread: results === undefined ? hydrated : { ...hydrated, nodeResults }, known };
}

function headBytesOf(thread: Thread): number {
  const { nodeResults: _results, executionHistory: _history, ...head } = thread;
  return JSON.stringify(head).length;
}

/** What loading an envelope's thread reads of it: `item` on a list item's first step. */
type ThreadEnvelope = Pick<Envelope, 'threadId' | 'rootThreadId'> &
  Partial<Pick<Envelope, 'item' | 'executionId'>>;

async function loadHeads(
  deps: HandlerDeps,
  envelope: ThreadEnvelope,
  extraIds: readonly string[],
  extrasMayBeMissing: boolean,
  also: AlsoRead = {},
): Promise<Omit<LoadedThread, 'known'> & { extra: VersionedThread[]; with: ReadWith }> {
  const alsoReads = (also.steps?.length ?? 0) + (also.items?.length ?? 0) > 0;
  if (isRootThread(envelope) && extraIds.length === 0 && !alsoReads) {
    // The head this process's commit of the thread's previous step wrote, where the store keeps it.
    const { thread, version } = await deps.threads.getThread(envelope.threadId, { afterOwnWrite: true });
    return { thread, version, headBytes: headBytesOf(thread), extra: [], with: { steps: [], items: [] } };
  }
  const ids = isRootThread(envelope)
    ? [envelope.threadId, ...extraIds]
    : [envelope.threadId, envelope.rootThreadId, ...extraIds];
  const { threads: found, steps, items } = await deps.threads.findThreadsWith(ids, also);
  const read: ReadWith = { steps, items };
  const { item, executionId } = envelope;
  const firstOfItem = item !== undefined && executionId !== undefined && !isRootThread(envelope);
  if (firstOfItem && found[0] === undefined && found[1] !== undefined) {
    // A list item's first step (or its failure report) creates the item's thread (nodes/map-items.ts).
    await createItemThread(
      deps,
      { threadId: envelope.threadId, executionId: executionId!, item: item! },
      found[1],
    );
    found[0] = await deps.threads.getThread(envelope.threadId);
  }
  const fixed = isRootThread(envelope) ? 1 : 2;
  const missing = ids.filter((_id, i) => found[i] === undefined && (i < fixed || !extrasMayBeMissing));
  if (missing.length > 0) {
    throw new StepthreadError('THREAD_NOT_FOUND', `thread(s) not found: ${[...new Set(missing)].join(', ')}`);
  }
  const own = found[0]!;
  const extra = found.slice(fixed).filter((entry): entry is VersionedThread => entry !== undefined);
  const headBytes = headBytesOf(own.thread);
  if (isRootThread(envelope)) return { ...own, headBytes, extra, with: read };
  const root = found[1]!;
  return { ...withRootGlobals(own, root), headBytes, root, extra, with: read };
}

/** A child's thread with the root's global scope in place of its stored (empty) one. */
export function withRootGlobals(child: VersionedThread, root: VersionedThread): VersionedThread {
  const { thread } = child;
  return {
    version: child.version,
    thread: { ...thread, variables: { ...thread.variables, global: root.thread.variables.global } },
  };
}

/** What is stored for a thread: fork children keep no copy of the global scope (the root owns it). */
export function storedVariables(thread: Thread, isRoot: boolean): Thread['variables'] {
  return isRoot ? thread.variables : { ...thread.variables, global: {} };
}

/** The envelope after a step: identity fields kept, per-step fields replaced. */
export function nextEnvelope(
  envelope: IncomingEnvelope,
  step: number,
  last: Envelope['last'],
  extras: EnvelopeExtras = {},
): Envelope {
  const { executionId, workflowId, workflowVersion, rootThreadId, threadId, maxSteps, history } = envelope;
  return {
    executionId,
    workflowId,
    workflowVersion,
    rootThreadId,
    threadId,
    step,
    maxSteps,
    // Continue-as-new's count of this execution's history (the dispatch added this step's events).
    ...(history === undefined ? {} : { history }),
    ...definedOnly(extras),
    ...(last === undefined ? {} : { last }),
  };
}

function definedOnly<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>;
}

export interface StepContext {
  readonly event: TaskEvent;
  readonly node: TaskNode;
  readonly envelope: IncomingEnvelope;
  readonly deps: HandlerDeps;
  /** Working copy of the thread; the logic edits it (variables, contextData, output, status, ...). */
  thread: Thread;
  /** The conversation, for node types that read it. */
  readonly conversation: ConversationView | undefined;
  /** Token usage after this node's LLM calls, when it made any. */
  tokenUsage?: TokenUsage;
  /** What the node's code printed (CODE): kept on its result, completed or failed. */
  logs?: NodeLogs;
  /** An LLM node's tool calls, when it made any: kept on its result. */
  toolCalls?: ToolCallCounts;
  /** An LLM node's model calls (tokens, cost), when it made any: kept on its result, failed or not. */
  usage?: ModelUsage;
  /**
   * Set by a step whose only change of a global is adding `delta` to it (VARIABLE `done + 1`): in a
   * fork branch, the root applies it as an atomic increment rather than a conditional rewrite.
   */
  increment?: { readonly name: string; readonly delta: number };
  /** What the next envelope carries for the state machine (route, loop, fork, ...). */
  readonly out: EnvelopeExtras;
  /** The threads named by the behaviour's `relatedThreadIds`, loaded with this one, in that order. */
  readonly related: readonly VersionedThread[];
  /** The run's root thread's metadata as loaded with this step (this thread's own on the root). */
  readonly rootMetadata: ThreadMetadata;
  /** The items named by the behaviour's `relatedItems`, as stored (undefined when absent), in that order. */
  readonly relatedItems: readonly (Record<string, unknown> | undefined)[];
  /** The expression scope over the working thread, as it is now. */
  scope(): ExpressionScope;
  /** Head-shaped data as stored: values loaded by reference keep their references (see `storable`). */
  storable<T extends Slotted>(data: T): T;
}

export interface AfterCommitContext {
  readonly deps: HandlerDeps;
  readonly event: TaskEvent;
  readonly node: TaskNode;
  /** The thread as committed (or, on a replay, as stored). */
  readonly thread: Thread;
  /** The related threads as loaded before the step ran; absent on a replay. */
  readonly related?: readonly VersionedThread[];
  /** The step's committed result (from its record on a replay; absent if the record is missing). */
  readonly result?: NodeResult;
}

export interface NodeBehaviour {
  /** Whether the node needs the conversation's messages (the one S3 read of a step). */
  readonly readsConversation?: boolean;
  /** Other threads the node reads (JOIN: the fork children), fetched in the same BatchGetItem. */
  relatedThreadIds?(event: TaskEvent): readonly string[];
  /** Whether related threads may not exist (a list's items that never started): left out, not an error. */
  relatedMayBeMissing?(event: TaskEvent): boolean;
  /**
   * The node results the related threads come with (JOIN merges them): those nodes', or 'all';
   * none when absent or empty.
   */
  relatedResults?(event: TaskEvent): readonly string[] | 'all';
  /** Other items of the table the node reads (JOIN: its join item), fetched in the same BatchGetItem. */
  relatedItems?(event: TaskEvent): readonly ItemKey[];
  logic(ctx: StepContext): NodeLogicResult | Promise<NodeLogicResult>;
  /** When the node started, if before its step ran (a question asked before its answer's step). */
  startedAt?(ctx: StepContext): Promise<string | undefined>;
  /** Idempotent effects after the commit, run again when a retry replays the step. */
  afterCommit?(ctx: AfterCommitContext): Promise<void>;
}

/** Fields the logic may change; each is written only when it did. */
const TRACKED_FIELDS = [
  'status',
  'endTime',
  'output',
  'variables',
  'contextData',
  'conversation',
  'globalWriters',
] as const satisfies readonly (keyof Thread)[];

function changed(a: unknown, b: unknown): boolean {
  return !sameJson(a, b);
}

function failureOf(record: StepRecord | undefined, last: Envelope['last']): CodedError | undefined {
  if (last?.status !== 'FAILED') return undefined;
  return (
    record?.result.error ?? {
      code: 'NODE_EXECUTION_FAILED',
      message: `node ${last.nodeId} failed`,
      nodeId: last.nodeId,
    }
  );
}

/**
 * A retry of a step that already landed: the stored envelope (or the stored failure) again, after
 * re-running the step's idempotent after-commit work.
 */
async function replay(
  loaded: LoadedThread,
  event: TaskEvent,
  deps: HandlerDeps,
  behaviour: NodeBehaviour,
): Promise<Envelope> {
  const { thread } = loaded;
  const stored = thread.lastEnvelope;
  // A resumed run passes the steps the thread committed before: each replays from its own record.
  if ((thread.step ?? 0) > event.envelope.step + 1) return replayRecord(thread, event, deps);
  if (stored === undefined || (thread.step ?? 0) !== event.envelope.step + 1) {
    throw new StepthreadError(
      'STEP_MISMATCH',
      `thread ${thread.id} is at step ${thread.step ?? 0}; a retry of step ${event.envelope.step} cannot be replayed`,
      { nodeId: event.node.id },
    );
  }
  const record = await deps.threads.getStep(thread.id, thread.step ?? 0);
  // The first attempt may have died before publishing: publish again (consumers get at least once).
  await publishCommitted(deps.events, record?.events ?? [], { executionId: event.envelope.executionId });
  if (record) await deps.threads.putNodeResults(thread.id, keptResults(event.node, [record.result]));
  // A first attempt here is a resumed run passing the step an earlier process committed: its output
  // is shown again with it. A retry's first attempt reported it once committed.
  if (record && (deps.attempt ?? 1) === 1)
    await reportReplayedLogs(deps, thread.id, thread.step ?? 0, record.result);
  await finishCommitted(loaded, event, deps, behaviour, record?.result);
  const failure = failureOf(record, stored.last);
  if (failure) throw nodeFailed(failure);
  return stored;
}

/**
 * A step the thread committed before its latest one (a resumed execution replaying the run up to
 * where it stopped): the envelope that step produced, rebuilt from its record, with nothing run or
 * written again. Its after-commit work finished before the thread went on to the next step.
 */
async function replayRecord(thread: Thread, event: TaskEvent, deps: HandlerDeps): Promise<Envelope> {
  const step = event.envelope.step + 1;
  const record = await deps.threads.getStep(thread.id, step);
  if (record === undefined || record.result.nodeId !== event.node.id) {
    throw new StepthreadError(
      'STEP_MISMATCH',
      `thread ${thread.id} ran ${record?.result.nodeId ?? 'nothing recorded'} at step ${step}, not ${event.node.id}: the run cannot be replayed with this workflow`,
      { nodeId: event.node.id },
    );
  }
  await reportReplayedLogs(deps, thread.id, step, record.result);
  const failed = record.result.status === 'FAILED';
  const last = { nodeId: record.result.nodeId, status: failed ? 'FAILED' : 'COMPLETED' } as const;
  if (failed) {
    throw nodeFailed(record.result.error ?? { code: 'NODE_EXECUTION_FAILED', message: 'node failed' });
  }
  return nextEnvelope(event.envelope, step, last, (record.out ?? {}) as EnvelopeExtras);
}

/**
 * A replayed step's console output, told as when the step ran (a resumed run's progress shows each
 * replayed node's lines with it), read back when its record holds it by reference.
 */
async function reportReplayedLogs(
  deps: HandlerDeps,
  threadId: string,
  step: number,
  result: NodeResult,
): Promise<void> {
  deps.onNodeResult?.({ threadId, step, result });
  if (result.logs === undefined || deps.onNodeLogs === undefined) return;
  const {
    data: [read],
  } = await hydrateAll(deps.values, [{ logs: result.logs }]);
  const logs = read?.logs as NodeLogs | undefined;
  if (logs) deps.onNodeLogs({ threadId, nodeId: result.nodeId, step, logs });
}

async function finishCommitted(
  loaded: LoadedThread,
  event: TaskEvent,
  deps: HandlerDeps,
  behaviour: NodeBehaviour,
  result: NodeResult | undefined,
  related?: readonly VersionedThread[],
): Promise<void> {
  const { thread } = loaded;
  await behaviour.afterCommit?.({
    deps,
    event,
    node: event.node,
    thread,
    ...(result ? { result } : {}),
    ...(related ? { related } : {}),
  });
}

/** Runs one node execution on the envelope's thread and returns the next envelope. */
export async function runNodeStep(
  given: TaskEvent,
  deps: HandlerDeps,
  behaviour: NodeBehaviour,
): Promise<Envelope> {
  if (given.report === undefined) return runStep(given, deps, behaviour);
  // The node is its fork path's last (compile.ts): its commit finished the path's thread; report it.
  const finished: FinishedPath = {};
  const next = await runStep(given, deps, behaviour, finished);
  const { thread, root } = finished.thread
    ? { thread: finished.thread, root: finished.root }
    : { thread: (await deps.threads.getThread(given.envelope.threadId)).thread, root: undefined };
  return reportBranch(
    { node: given.report, envelope: given.envelope, next },
    deps,
    thread,
    finished.finishing ?? false,
    root,
  );
}

/**
 * A fork path's last step, for its report: the thread as the step left it (absent: read it again),
 * whether this invocation finished it, and the root as the step read it.
 */
interface FinishedPath {
  thread?: Thread;
  finishing?: boolean;
  root?: VersionedThread;
}

async function runStep(
  given: TaskEvent,
  deps: HandlerDeps,
  behaviour: NodeBehaviour,
  finished?: FinishedPath,
): Promise<Envelope> {
  const { envelope } = given;
  const patienceMs = deps.globalWritePatienceMs ?? GLOBAL_WRITE_PATIENCE_MS;
  let firstLoss: number | undefined;
  for (let attempt = 1; ; attempt += 1) {
    const { loaded, event } = await loadOverlaid(given, deps, behaviour);
    const { node } = event;
    const stepBefore = loaded.thread.step ?? 0;
    if (stepBefore > envelope.step) {
      if (finished) Object.assign(finished, { thread: loaded.thread, finishing: false, root: loaded.root });
      return replay(loaded, event, deps, behaviour);
    }
    if (stepBefore < envelope.step) {
      throw new StepthreadError(
        'STEP_MISMATCH',
        `thread ${loaded.thread.id} is at step ${stepBefore}, the envelope at ${envelope.step}`,
        { nodeId: node.id },
      );
    }
    // A crash after this step's global write landed on the root and before its commit: finish it.
    if (loaded.root?.thread.globalWriters?.[loaded.thread.id] === stepBefore + 1) {
      return commitFromRecord(loaded, event, deps, behaviour);
    }
    if (isTerminalStatus(loaded.thread.status)) {
      // The run's cancel (its root CANCELLED), not a join's cancel of a branch it no longer needed.
      const root = loaded.root?.thread ?? loaded.thread;
      const cancelled = loaded.thread.status === 'CANCELLED' && root.status === 'CANCELLED';
      throw new StepthreadError(
        cancelled ? 'RUN_CANCELLED' : 'INVALID_STATUS_TRANSITION',
        `thread ${loaded.thread.id} is ${loaded.thread.status}; node ${node.id} cannot run on it`,
        { nodeId: node.id },
      );
    }
    assertHeadFits(loaded.thread, loaded.headBytes, node.id);
    try {
      // A step run again after a sibling's global write evaluates afresh, with a budget of its own.
      return await (attempt === 1
        ? executeStep(loaded, event, deps, behaviour, finished)
        : withNodeBudget(node.id, () => executeStep(loaded, event, deps, behaviour, finished)));
    } catch (error) {
      if (!(error instanceof GlobalsChanged)) throw error;
      firstLoss ??= performance.now();
      const wait = contentionWaitMs(attempt);
      if (performance.now() + wait - firstLoss > patienceMs) {
        throw globalsContended(node.id, error.names, attempt, patienceMs);
      }
      // Spread the siblings out: each retry re-evaluates against the globals as they are now.
      await new Promise((resolve) => setTimeout(resolve, wait));
      deps.signal?.throwIfAborted();
    }
  }
}

/**
 * The step's thread, and the event with the node as the run's copy edits make it (node-overlay.ts):
 * the edits its root thread records apply to the node config the Task gave. An edited config that
 * reads node outputs the given one did not has them loaded too (a second read, edited copies only).
 */
async function loadOverlaid(
  given: TaskEvent,
  deps: HandlerDeps,
  behaviour: NodeBehaviour,
): Promise<{ loaded: LoadedThread & { extra: VersionedThread[]; with: ReadWith }; event: TaskEvent }> {
  const items = behaviour.relatedItems?.(given) ?? [];
  const load = (node: TaskNode) =>
    loadThread(deps, given.envelope, behaviour.relatedThreadIds?.(given) ?? [], {
      ...(items.length > 0 ? { also: { items } } : {}),
      nodes: neededNodeResults(node),
      ...(behaviour.relatedResults ? { extraResults: behaviour.relatedResults(given) } : {}),
      ...(behaviour.relatedMayBeMissing?.(given) ? { extrasMayBeMissing: true } : {}),
    });
  const loaded = await load(given.node);
  const node = overlaidNode(given.node, loaded);
  if (node === given.node) return { loaded, event: given };
  const before = neededNodeResults(given.node);
  const after = neededNodeResults(node);
  const more = before !== 'all' && (after === 'all' || after.some((id) => !before.includes(id)));
  return { loaded: more ? await load(node) : loaded, event: { ...given, node } };
}

/** The node with the copy edits of the run `loaded` belongs to (its root thread's) applied. */
export function overlaidNode<T extends TaskNode>(node: T, loaded: Pick<LoadedThread, 'thread' | 'root'>): T {
  return withNodeOverlay(node, workflowEditsOf(loaded.root?.thread ?? loaded.thread));
}

/**
 * Commits a fork child's step whose global write already reached the root (the attempt died
 * before its own commit): from the step's record, so the write is never applied twice.
 */
async function commitFromRecord(
  loaded: LoadedThread,
  event: TaskEvent,
  deps: HandlerDeps,
  behaviour: NodeBehaviour,
): Promise<Envelope> {
  const { thread, version } = loaded;
  const step = (thread.step ?? 0) + 1;
  const record = await deps.threads.getStep(thread.id, step);
  if (record === undefined) {
    throw new StepthreadError(
      'STEP_MISMATCH',
      `thread ${thread.id} wrote globals for step ${step} but has no record of it`,
      {
        nodeId: event.node.id,
      },
    );
  }
  const { result } = record;
  const last = {
    nodeId: result.nodeId,
    status: result.status === 'FAILED' ? 'FAILED' : 'COMPLETED',
  } as const;
  const next = nextEnvelope(event.envelope, step, last, record.out ?? {});
  await deps.threads.updateThread(thread.id, version, {
    set: { ...(record.state as ThreadChange['set']), step, lastEnvelope: next, currentNodeId: result.nodeId },
    ...(record.removed ? { remove: record.removed as ThreadOptionalField[] } : {}),
    ...(result.error ? { append: { errors: [result.error] } } : {}),
  });
  await deps.threads.putNodeResults(thread.id, keptResults(event.node, [result]));
  await publishCommitted(deps.events, record.events, { executionId: event.envelope.executionId });
  const committed = { ...thread, step, lastEnvelope: next };
  await finishCommitted({ ...loaded, thread: committed }, event, deps, behaviour, result);
  if (result.status === 'FAILED')
    throw nodeFailed(result.error ?? { code: 'NODE_EXECUTION_FAILED', message: 'node failed' });
  return next;
}

/**
 * A thread's head is one DynamoDB item, and items stop at 400 KB. Results and history live in their
 * own items, so steps do not grow it; this backstop catches what still could (huge variables or
 * context data) with a coded error while there is room left to record the failure, rather than an
 * opaque ValidationException from AWS (dynalite does not enforce the limit).
 */
export const THREAD_ITEM_BUDGET_BYTES = 350_000;

export function assertThreadFits(thread: Thread, nodeId: string): void {
  assertHeadFits(thread, headBytesOf(thread), nodeId);
}

function assertHeadFits(thread: Thread, bytes: number, nodeId: string): void {
  if (bytes <= THREAD_ITEM_BUDGET_BYTES) return;
  throw new StepthreadError(
    'THREAD_TOO_LARGE',
    `thread ${thread.id} already holds ${bytes} bytes after ${thread.step ?? 0} steps (variables, context data); ` +
      'a thread is one DynamoDB item (400 KB at most), so the run stops here rather than fail at the store',
    { nodeId },
  );
}

async function executeStep(
  loaded: LoadedThread & { extra: VersionedThread[]; with: ReadWith },
  event: TaskEvent,
  deps: HandlerDeps,
  behaviour: NodeBehaviour,
  finished?: FinishedPath,
): Promise<Envelope> {
  const { node, envelope } = event;
  const original = loaded.thread;
  const step = (original.step ?? 0) + 1;
  const isRoot = isRootThread(envelope);
  const preEvents: StepthreadEvent[] = [];
  let working: Thread = deepCopy(original);
  if (working.status === 'CREATED') {
    // A fork child's first node starts it.
    const started = transitionThread(working, 'RUNNING', deps.env);
    working = started.thread;
    preEvents.push(started.event);
  }
  const startedThread = working;

  let conversation: ConversationView | undefined;
  if (behaviour.readsConversation) {
    const log = await deps.conversations.readLog(original.conversation.log, {
      segmentHints: () => deps.threads.segmentIds(conversationThreads(original)),
    });
    conversation = openConversation(original.conversation, log);
  }
  const ctx: StepContext = {
    event,
    node,
    envelope,
    deps,
    thread: working,
    conversation,
    out: {},
    related: loaded.extra,
    rootMetadata: (loaded.root?.thread ?? original).metadata,
    relatedItems: loaded.with.items,
    scope: () => buildExpressionScope(ctx.thread, node.nodeAliases),
    storable: (data) => storable(data, loaded.known),
  };

  // Only coded errors are the node's failure; anything else (a store write that failed or a crash,
  // throttling, an aborted call) abandons the step uncommitted, so a retry runs it afresh.
  let abandoned: { error: unknown } | undefined;
  const startedAt = await behaviour.startedAt?.(ctx);
  const lifecycle = await executeNodeLifecycle({
    node: { id: node.id, type: node.type, ...(node.hooks ? { hooks: node.hooks } : {}) },
    threadId: original.id,
    workflowId: original.workflowId,
    scope: () => buildExpressionScope(working, node.nodeAliases),
    scopeAfter: () => buildExpressionScope(ctx.thread, node.nodeAliases),
    ...(node.enclosingSubgraphs
      ? { enclosing: { subgraphs: node.enclosingSubgraphs, entered: subgraphsEntered(node, working) } }
      : {}),
    ...subgraphBoundaryOf(node),
    env: deps.env,
    ...(deps.attempt === undefined ? {} : { attempt: deps.attempt }),
    ...(startedAt === undefined ? {} : { startedAt }),
    logic: async () => {
      if (step > envelope.maxSteps) {
        throw maxStepsExceeded(envelope.maxSteps, node.id, original.metadata.forkPathId);
      }
      try {
        return await behaviour.logic(ctx);
      } catch (error) {
        if (!(error instanceof StepthreadError) || isTransient(error)) abandoned = { error };
        throw error;
      }
    },
  });
  if (abandoned) throw abandoned.error;
  const result: NodeResult = {
    ...lifecycle.result,
    ...(ctx.logs ? { logs: ctx.logs } : {}),
    ...(ctx.toolCalls ? { toolCalls: ctx.toolCalls } : {}),
    ...(ctx.usage ? { usage: ctx.usage } : {}),
  };
  const failed = result.status === 'FAILED';
  // A failed node changes nothing but its result: its partial work is dropped.
  let after: Thread = failed ? startedThread : ctx.thread;
  const postEvents: StepthreadEvent[] = [];
  if (finished && !failed && after.status === 'RUNNING') {
    // The fork path's last node: its step finishes the path's thread with the node's output, in the
    // same commit (what a `branch-done` Task would do after it, with three more requests).
    const done = transitionThread(
      { ...after, ...(result.output === undefined ? {} : { output: result.output }) },
      'COMPLETED',
      deps.env,
    );
    after = done.thread;
    postEvents.push(done.event);
  }

  // Large values the step leaves equal to an appended message's content are stored as that message.
  const messageRefs = new Map<string, string>();
  // The step's new conversation segment, written while the commit is built and beside its record.
  let segmentWritten: Promise<unknown> | undefined;
  if (!failed && conversation !== undefined) {
    let state = conversation.state();
    const appended = conversation.appendedMessages();
    if (appended.length > 0) {
      const prepared = await deps.conversations.prepareAppend(original.conversation.log, appended);
      const { pointer } = prepared;
      segmentWritten = prepared.write();
      // Awaited with the record (below); a failure before then is that await's to report.
      segmentWritten.catch(() => {});
      state = withLogId(state, pointer.id);
      appended.forEach((message, i) => {
        if (typeof message.content === 'string' && message.content.length > INLINE_VALUE_BYTES) {
          messageRefs.set(message.content, `m:${pointer.id}/${original.conversation.log.length + i}`);
        }
      });
    }
    after.conversation = ctx.tokenUsage ? { ...state, tokenUsage: ctx.tokenUsage } : state;
  } else if (!failed && ctx.tokenUsage) {
    after.conversation = { ...after.conversation, tokenUsage: ctx.tokenUsage };
  }

  const last = { nodeId: node.id, status: failed ? 'FAILED' : 'COMPLETED' } as const;
  const next = nextEnvelope(envelope, step, last, failed ? {} : ctx.out);
  const events = [...preEvents, ...lifecycle.events, ...postEvents];
  // What the state machine routes on next, kept in the record so a resumed run can replay the step.
  const out = definedOnly(failed ? {} : ctx.out);
  const built = buildChange({ original, after, isRoot, step, result, next, events, out });
  // Values over INLINE_VALUE_BYTES go by reference; new ones in one S3 object (at most one PUT).
  const spiller = createSpiller(loaded.known, messageRefs, { nodeId: node.id });
  const change = storedChange(built.change, spiller);
  const results = keptResults(node, [...mergedResults(original, after), result]).map((kept) =>
    mapSlots(kept, spiller.spill),
  );
  const globals = built.globals ? mapRecord(built.globals, spiller.spill) : undefined;
  if (spiller.pending.size > 0) spiller.resolve(await requireValues(deps).putValues(spiller.pending));
  if (globals === undefined) {
    await deps.threads.updateThread(original.id, loaded.version, change, segmentWritten);
  } else {
    await segmentWritten;
    // A fork child wrote globals: its record first (with what the state machine needs next), then
    // the root's globals, conditional on the root as this step read it (a sibling's write in between
    // makes the step run again against the new values), then its own commit.
    const { step: record, ...rest } = change;
    await deps.threads.putStepRecord(original.id, { ...record!, out: ctx.out });
    const names = changedNames(original.variables.global, globals);
    const increment = names.length === 1 && names[0] === ctx.increment?.name ? ctx.increment : undefined;
    if (increment) {
      const value = await incrementRootGlobal(deps, loaded, increment, step);
      if (value !== result.output) {
        // Siblings added meanwhile: the step's output is the value its increment made, not its guess.
        result.output = value;
        for (const kept of results) if (kept.nodeId === node.id) kept.output = value;
        await deps.threads.putStepRecord(original.id, {
          ...record!,
          result: { ...record!.result, output: value },
          out: ctx.out,
        });
      }
    } else {
      await writeRootGlobals(deps, loaded, globals, names, step);
    }
    await deps.threads.updateThread(original.id, loaded.version, rest);
    // Committed: the root no longer needs this writer's mark (kept, it would grow with the branches).
    await deps.threads.forgetGlobalWriter(loaded.root!.thread.id, original.id, step);
  }
  // After the commit (a replayed retry writes them again): what `{{nodes.<id>}}` reads next.
  await deps.threads.putNodeResults(original.id, results);
  await publishCommitted(deps.events, events, { executionId: envelope.executionId });
  // Once committed, so an abandoned attempt's output never shows (its retry prints its own).
  if (result.logs) deps.onNodeLogs?.({ threadId: original.id, nodeId: node.id, step, logs: result.logs });
  deps.onNodeResult?.({ threadId: original.id, step, result });

  const committed: Thread = { ...after, step, lastEnvelope: next };
  if (finished) Object.assign(finished, { thread: committed, finishing: true, root: loaded.root });
  await finishCommitted({ ...loaded, thread: committed }, event, deps, behaviour, result, loaded.extra);
  if (failed) throw nodeFailed(result.error ?? { code: 'NODE_EXECUTION_FAILED', message: 'node failed' });
  return next;
}

interface ChangeInput {
  original: Thread;
  after: Thread;
  isRoot: boolean;
  step: number;
  result: NodeResult;
  next: Envelope;
  events: StepthreadEvent[];
  /** The node's additions to the next envelope (route, loop, fork, ...). */
  out?: Partial<EnvelopeExtras>;
}

/** Head fields that are bookkeeping of the step protocol, not the thread's state. */
const BOOKKEEPING_FIELDS = new Set(['step', 'lastEnvelope', 'globalWriters']);

/** The results to keep as latest results: all but the node's own when nothing reads it. */
function keptResults(node: TaskNode, results: readonly NodeResult[]): NodeResult[] {
  return node.resultUnread ? results.filter((result) => result.nodeId !== node.id) : [...results];
}

/**
 * Sets the root's global scope to a child's, conditional on the root's version when the child loaded
 * it, and records which step of the child wrote it (so a retry after a crash commits instead of
 * writing again). GlobalsChanged when a sibling wrote first.
 */
async function writeRootGlobals(
  deps: HandlerDeps,
  loaded: LoadedThread,
  global: Variables,
  names: readonly string[],
  step: number,
): Promise<void> {
  const root = loaded.root!;
  assertRootTakesWrites(loaded);
  const writers = { ...(root.thread.globalWriters ?? {}), [loaded.thread.id]: step };
  try {
    await deps.threads.updateThread(root.thread.id, root.version, {
      set: { variables: { ...root.thread.variables, global }, globalWriters: writers },
    });
  } catch (error) {
    if (error instanceof StepthreadError && error.code === 'VERSION_CONFLICT')
      throw new GlobalsChanged(names);
    throw error;
  }
}

/** A fork child's global write is refused once its join decided without it or the run was cancelled. */
function assertRootTakesWrites(loaded: LoadedThread): void {
  const root = loaded.root!;
  // A branch whose join has decided (it finished after the decision: a straggler) leaves the globals
  // alone. Closing a join bumps the root's version, so a straggler that read the root before that
  // fails the conditional write below, reloads, and stops here.
  const joinKey = loaded.thread.metadata.joinKey;
  if (typeof joinKey === 'string' && root.thread.closedJoins?.includes(joinKey)) {
    throw new StepthreadError(
      'JOIN_ALREADY_DECIDED',
      `this branch's join (${joinKey}) decided without it; its global writes are dropped`,
      { nodeId: loaded.thread.currentNodeId },
    );
  }
  // A cancelled run's root takes no more writes: the branch's step leaves no trace.
  if (root.thread.status === 'CANCELLED') {
    throw new StepthreadError(
      'RUN_CANCELLED',
      `thread ${root.thread.id} was cancelled; its global writes are dropped`,
      {
        nodeId: loaded.thread.currentNodeId,
      },
    );
  }
}

/**
 * Adds a fork child's increment to the root's global in one conditional UpdateItem that no sibling's
 * write can make fail (the read-modify-write of writeRootGlobals loses to every concurrent sibling).
 * Refused when the step already added it, the join closed or the run was cancelled: GlobalsChanged,
 * so the step reloads and its retry loop decides (commit from the record, or the coded refusal).
 */
async function incrementRootGlobal(
  deps: HandlerDeps,
  loaded: LoadedThread,
  increment: { readonly name: string; readonly delta: number },
  step: number,
): Promise<number> {
  assertRootTakesWrites(loaded);
  const joinKey = loaded.thread.metadata.joinKey;
  const landed = await deps.threads.addToGlobal(loaded.root!.thread.id, {
    ...increment,
    writerId: loaded.thread.id,
    step,
    ...(typeof joinKey === 'string' ? { joinKey } : {}),
  });
  if (landed === 'refused') throw new GlobalsChanged([increment.name]);
  return landed.value;
}

/** The global variables a step changed (or added, or removed). */
function changedNames(before: Variables, after: Variables): string[] {
  const names = new Set([...Object.keys(before), ...Object.keys(after)]);
  return [...names].filter((name) => changed(before[name], after[name])).sort();
}

/** The change as stored: large values in its head fields and its record by reference. */
function storedChange(change: ThreadChange, spiller: Spiller): ThreadChange {
  const record = change.step;
  return {
    ...change,
    ...(change.set ? { set: mapSlots(change.set as Slotted, spiller.spill) as ThreadChange['set'] } : {}),
    ...(record
      ? {
          step: {
            ...record,
            result: mapSlots(record.result, spiller.spill),
            ...(record.state ? { state: mapSlots(record.state as Slotted, spiller.spill) as StepState } : {}),
          },
        }
      : {}),
  };
}

function requireValues(deps: HandlerDeps): ValueStore {
  if (deps.values === undefined) throw new Error('a large value needs the value store (deps.values)');
  return deps.values;
}

/**
 * Head-shaped data as stored, for threads a node creates from its loaded one (FORK's children):
 * values it loaded by reference keep their references; anything new stays inline.
 */
export function storable<T extends Slotted>(data: T, known: ReadonlyMap<string, ValueRef>): T {
  const spiller = createSpiller(known);
  const stored = mapSlots(data, spiller.spill);
  return spiller.pending.size === 0 ? stored : data;
}

/** The threads whose steps wrote a thread's conversation: itself, those it forked from, its copy source. */
function conversationThreads(thread: Thread): string[] {
  const source = thread.metadata.copiedFrom;
  return [...lineageOf(thread), ...(typeof source === 'string' ? [source] : [])];
}

/** Results the logic added to the thread's (JOIN: the branches' results), written after the commit. */
function mergedResults(original: Thread, after: Thread): NodeResult[] {
  return Object.entries(after.nodeResults)
    .filter(([nodeId, result]) => changed(original.nodeResults[nodeId], result))
    .map(([, result]) => result);
}

/**
 * The one UpdateItem of a step and the record it writes first: their sizes depend on what the step
 * changed, not on the thread's past.
 */
export function buildChange(input: ChangeInput): {
  change: ThreadChange;
  /** A fork child's whole global scope after the step, when the step changed it (the root owns it). */
  globals?: Variables;
} {
  const { original, after, isRoot, step, result, next } = input;
  const set: Record<string, unknown> = { step, lastEnvelope: next, currentNodeId: result.nodeId };
  const remove: ThreadOptionalField[] = [];
  let globals: Variables | undefined;

  for (const field of TRACKED_FIELDS) {
    if (field === 'variables') {
      const before = storedVariables(original, isRoot);
      const now = storedVariables(after, isRoot);
      if (changed(before, now)) set.variables = now;
      if (!isRoot && changed(original.variables.global, after.variables.global))
        globals = after.variables.global;
      continue;
    }
    const value = after[field];
    if (!changed(original[field], value)) continue;
    if (value === undefined) remove.push(field as ThreadOptionalField);
    else set[field] = value;
  }

  const state = Object.fromEntries(Object.entries(set).filter(([field]) => !BOOKKEEPING_FIELDS.has(field)));
  const record: StepRecord = {
    step,
    result,
    events: input.events,
    state: state as StepState,
    ...(remove.length > 0 ? { removed: remove } : {}),
    ...(input.out && Object.keys(input.out).length > 0 ? { out: input.out } : {}),
  };
  const change: ThreadChange = {
    set: set as ThreadChange['set'],
    ...(remove.length > 0 ? { remove } : {}),
    ...(result.error ? { append: { errors: [result.error] } } : {}),
    step: record,
  };
  return globals ? { change, globals } : { change };
}
