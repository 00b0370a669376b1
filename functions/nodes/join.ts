/**
 * JOIN and its bookkeeping actions (runtime-design.md, "FORK parallel" / "FORK serial"):
 *
 * - `branch-done` / `branch-failed` run on a child thread at the end of its branch: finish the child
 *   (COMPLETED with the branch's last output, or FAILED with the caught error), record the path's
 *   outcome in the join item, and once the join can decide (or, with a timer branch, once every
 *   path reported) say so in the result (`joinDecided`): the Choice after the report then fails the
 *   path with `stepthread.JoinDecided` (a Fail state), so the Parallel stops waiting — for both fork
 *   strategies (a serial fork is a chain of one-branch Parallels with the same Catch). A decision is
 *   an outcome, not an error: the invocation succeeds, and Lambda's error metrics never count it.
 * - `timeout` runs on the parent when the join's timer branch fires: records it and returns; the
 *   timer's Fail state then raises `stepthread.JoinTimeout`.
 * - `execute` runs on the parent: joinThreads over the children, then (after the commit) marks the
 *   children that never finished CANCELLED.
 *
 * Each is idempotent: finishing a child is skipped once it finished, the join store records each
 * path once, and the decision is recomputed from what is recorded: the paths it counted are the
 * shortest prefix of the order the paths reported in that decides (`countedPaths`), which every
 * report and the JOIN find alike, so no request records it apart.
 */
import { JOIN_DECIDED_KEY } from '../../engine/asl/task-input.ts';
import { StepthreadError } from '../../engine/errors.ts';
import type { NodeLogicResult } from '../../engine/lifecycle.ts';
import { joinConfigSchema } from '../../engine/model/schema.ts';
import {
  branchStatusOf,
  decideJoin,
  decidesEarly,
  type BranchOutcome as EngineBranchOutcome,
  isTerminalStatus,
  type JoinResult,
  joinItems,
  joinThreads,
  transitionThread,
} from '../../engine/thread/index.ts';
import type { Envelope, Thread } from '../../engine/thread/types.ts';
import { type PublishContext, publishCommitted } from '../events/publisher.ts';
import type { HandlerDeps } from '../handlers/deps.ts';
import { loadThread, type NodeBehaviour, nextEnvelope, type StepContext } from '../handlers/pipeline.ts';
import { codedErrorFromAsl, TASK_ERROR_NAMES, type TaskEvent } from '../handlers/task.ts';
import { type BranchOutcome, type JoinState, joinItemKey, joinStateOf } from '../stores/join-store.ts';
import type { StepRecord, VersionedThread } from '../stores/thread-store.ts';
import { parseConfig } from './config.ts';
import { markThreadFailed } from './fail.ts';
import { itemThreadId, JOIN_KEY, listItemOf } from './fork.ts';
import { joinKeyFor } from './ids.ts';
import { joinedCalls, LLM_CALLS_KEY } from './llm-calls.ts';

/** A JOIN's config as its bookkeeping tasks carry it: the path list may be left out (`paths` counts them). */
const bookkeepingConfigSchema = joinConfigSchema.partial({ forkPathIds: true });
type BookkeepingConfig = ReturnType<typeof bookkeepingConfigSchema.parse>;

/** The join item's entry for the timer branch (path ids contain `/`, never a leading `:`). */
export const TIMER_ENTRY = ':timeout';

function joinKeyOf(child: Thread, nodeId: string): string {
  const key = child.metadata[JOIN_KEY];
  if (typeof key !== 'string') {
    throw new StepthreadError(
      'INVALID_TASK_INPUT',
      `thread ${child.id} is not a fork child of join ${nodeId}`,
      {
        nodeId,
      },
    );
  }
  return key;
}

/**
 * Completes the child with its branch's last output (the node before this task). `read`: the record
 * of the envelope's step, read with the child's head (the branch's last step, unless the head moved).
 */
async function completeChild(
  deps: HandlerDeps,
  child: Thread,
  version: number,
  lastNodeId: string | undefined,
  read: { step: number; record: StepRecord | undefined } | undefined,
  context: PublishContext,
): Promise<Thread> {
  let current = child;
  const events = [];
  if (current.status === 'CREATED') {
    const started = transitionThread(current, 'RUNNING', deps.env);
    current = started.thread;
    events.push(started.event);
  }
  // The branch's last step is the one that just ran on the child: its record holds the output.
  const step = child.step ?? 0;
  const last =
    lastNodeId === undefined
      ? undefined
      : read?.step === step
        ? read.record
        : await deps.threads.getStep(child.id, step);
  const output = last?.result.nodeId === lastNodeId ? last?.result.output : undefined;
  const done = transitionThread(
    { ...current, ...(output === undefined ? {} : { output }) },
    'COMPLETED',
    deps.env,
  );
  events.push(done.event);
  await deps.threads.updateThread(child.id, version, {
    set: {
      status: 'COMPLETED',
      ...(done.thread.endTime ? { endTime: done.thread.endTime } : {}),
      ...(output === undefined ? {} : { output }),
    },
    append: { events },
  });
  await publishCommitted(deps.events, events, context);
  return done.thread;
}

type ReportedStatus = BranchOutcome['status'];

function reportedStatus(status: Thread['status']): ReportedStatus {
  return status === 'COMPLETED' || status === 'FAILED' || status === 'CANCELLED' || status === 'TIMEOUT'
    ? status
    : 'FAILED';
}

/** Branch outcomes for decideJoin, the timer entry left out. */
function engineOutcomes(outcomes: Readonly<Record<string, BranchOutcome>>): EngineBranchOutcome[] {
  return Object.entries(outcomes).flatMap(([forkPathId, outcome]) => {
    if (forkPathId === TIMER_ENTRY) return [];
    const status = branchStatusOf(outcome.status);
    return status ? [{ forkPathId, status }] : [];
  });
}

export async function runBranchReport(
  event: TaskEvent,
  deps: HandlerDeps,
  outcome: 'COMPLETED' | 'FAILED',
): Promise<Envelope> {
  const { node, envelope } = event;
  // The compiled bookkeeping tasks carry the path count and their own path, not the path lists.
  const config = parseConfig(bookkeepingConfigSchema, node);
  const total = typeof node.paths === 'number' ? node.paths : (config.forkPathIds?.length ?? 0);
  // The branch's last step record (its output) comes in the same BatchGetItem as the child and root.
  const lastStep = outcome === 'COMPLETED' && envelope.last !== undefined ? envelope.step : undefined;
  const {
    thread: loaded,
    version,
    root,
    with: read,
  } = await loadThread(deps, envelope, [], {
    ...(lastStep === undefined ? {} : { also: { steps: [{ threadId: envelope.threadId, step: lastStep }] } }),
  });
  const joinKey = joinKeyOf(loaded, node.id);
  const pathId = node.path?.pathId ?? loaded.contextData.forkPathId;
  const onPath = node.path !== undefined || (pathId !== undefined && config.forkPathIds?.includes(pathId));
  if (pathId === undefined || !onPath) {
    throw new StepthreadError(
      'INVALID_FORK_PATH_IDS',
      `thread ${loaded.id} is on no path of join ${node.id}`,
      {
        nodeId: node.id,
      },
    );
  }
  let child = loaded;
  const finishing = !isTerminalStatus(child.status);
  if (finishing) {
    const context = { executionId: envelope.executionId };
    child =
      outcome === 'COMPLETED'
        ? await completeChild(
            deps,
            child,
            version,
            envelope.last?.nodeId,
            lastStep === undefined ? undefined : { step: lastStep, record: read.steps[0] },
            context,
          )
        : await markThreadFailed(
            deps,
            child,
            version,
            codedErrorFromAsl(envelope.error, envelope.last?.nodeId),
            context,
          );
  }
  if (node.overList) return reportItem(event, deps, child, joinKey, finishing);
  const { outcomes } = await deps.joins.recordBranchOutcome<BranchOutcome>(joinKey, pathId, {
    threadId: child.id,
    status: reportedStatus(child.status),
    endedAt: child.endTime ?? deps.env.now(),
    ...(child.errors.at(-1) && child.status !== 'COMPLETED' ? { error: child.errors.at(-1)! } : {}),
  });
  const reported = engineOutcomes(outcomes);
  const verdict = verdictOf(config, total, reported);
  // Once every path reported, no branch of the join runs a step any more, so none can write the
  // globals after the decision: closing the join on the root is for the branches still running.
  if (verdict.decided && reported.length < total) await closeJoin(deps, envelope.rootThreadId, joinKey, root);
  const { error: _error, ...rest } = envelope;
  const next = nextEnvelope(rest, envelope.step, envelope.last);
  // Serial and parallel alike: each path runs inside a Parallel state whose Catch routes the
  // JoinDecided the path's Fail state raises to the JOIN (a serial fork is a chain of one-branch
  // Parallels).
  return verdict.decided ? decidedBy(next, verdict.reason) : next;
}

/**
 * Whether these outcomes decide the join, and why: its strategy decides (a successful join also
 * waits for its main path, so the conversation the parent continues with never depends on which
 * branch was faster), or, with a timer branch running, every path reported (the Parallel would wait
 * for the timer: the last path ends it instead).
 */
function verdictOf(
  config: BookkeepingConfig,
  total: number,
  reported: readonly EngineBranchOutcome[],
): { decided: false } | { decided: true; reason: string } {
  const mainPathId = config.mainPathId ?? config.forkPathIds?.[0];
  const decision = decideJoin({
    strategy: config.joinStrategy,
    ...(config.threshold === undefined ? {} : { threshold: config.threshold }),
    total,
    outcomes: reported,
    ...(mainPathId === undefined ? {} : { mainPathId }),
  });
  if (decision.decided) return { decided: true, reason: decision.reason };
  if ((config.timeout ?? 0) > 0 && reported.length === total) {
    return { decided: true, reason: `all ${total} branches reported` };
  }
  return { decided: false };
}

/**
 * The paths the join's decision counted, or undefined while undecided: the paths of the shortest
 * prefix of the report order that decides the join, or that ends at the timer's entry (a timeout
 * decides with whatever reported before it). The order is fixed once written, so the report that
 * decided, any later one (a straggler, which changes nothing) and the JOIN all find the same paths.
 * A join item of an earlier layout may hold the decision its deciding report recorded: that stands.
 */
export function countedPaths(
  state: JoinState,
  config: BookkeepingConfig,
  total: number,
): string[] | undefined {
  if (state.decision !== undefined) return [...state.decision];
  const prefix: Record<string, BranchOutcome> = {};
  for (const path of state.order) {
    if (path === TIMER_ENTRY) return engineOutcomes(prefix).map((entry) => entry.forkPathId);
    const outcome = state.outcomes[path];
    if (outcome === undefined) continue;
    prefix[path] = outcome;
    const reported = engineOutcomes(prefix);
    if (verdictOf(config, total, reported).decided) return reported.map((entry) => entry.forkPathId);
  }
  return undefined;
}

/** The report's result when it decided the join: the Choice after it ends the path with JoinDecided. */
function decidedBy(next: Envelope, reason: string): Envelope {
  return { ...next, [JOIN_DECIDED_KEY]: reason } as Envelope;
}

/**
 * One item of a FORK over a list finished: decide early when its outcome (or, for
 * SUCCESS_COUNT_THRESHOLD, the items' counts) settles the join, so the Map stops; otherwise the Map
 * runs on and the JOIN decides over all items. Costs the same for every item whatever the list's
 * length: no per-item entry in a shared item (the threshold's counter is two numbers).
 */
async function reportItem(
  event: TaskEvent,
  deps: HandlerDeps,
  child: Thread,
  joinKey: string,
  finishing: boolean,
): Promise<Envelope> {
  const { node, envelope } = event;
  const config = parseConfig(bookkeepingConfigSchema, node);
  const status = child.status === 'COMPLETED' ? 'COMPLETED' : 'FAILED';
  const position = listItemOf(child);
  if (position === undefined) {
    throw new StepthreadError('INVALID_TASK_INPUT', `thread ${child.id} is no item of join ${node.id}`, {
      nodeId: node.id,
    });
  }
  const { index, total } = position;
  // Counted once, by the invocation that finished the item (a retry after a crash undercounts,
  // which only lets the Map run to its end, where the JOIN counts every item itself).
  const counts =
    config.joinStrategy === 'SUCCESS_COUNT_THRESHOLD' && finishing
      ? await deps.joins.countItem(joinKey, status)
      : undefined;
  let waitingForMainItem = false;
  if (config.mainItem !== undefined && status === 'COMPLETED' && index !== config.mainItem) {
    if (config.mainItem >= 0 && config.mainItem < total) {
      const base = child.id.slice(0, child.id.length - `-${index}`.length);
      // An item that has not started has no thread yet.
      const [main] = await deps.threads.findThreads([itemThreadId(base, config.mainItem)]);
      waitingForMainItem = main?.thread.status !== 'COMPLETED';
    }
  }
  const early =
    (counts !== undefined || config.joinStrategy !== 'SUCCESS_COUNT_THRESHOLD') &&
    decidesEarly({
      strategy: config.joinStrategy,
      ...(config.threshold === undefined ? {} : { threshold: config.threshold }),
      total,
      status,
      ...(counts === undefined ? {} : { counts }),
      waitingForMainItem,
    });
  const { error: _error, ...rest } = envelope;
  const next = nextEnvelope(rest, envelope.step, envelope.last);
  if (early) {
    await closeJoin(deps, envelope.rootThreadId, joinKey);
    return decidedBy(next, `item ${child.contextData.forkPathId} decided the join`);
  }
  // A retry of the report that decided (its result lost to a crash after the join closed) decides
  // again, though its item is counted already: the Map stops as it would have without the crash.
  if (!finishing && (await joinClosed(deps, envelope.rootThreadId, joinKey))) {
    return decidedBy(next, `item ${child.contextData.forkPathId} decided the join`);
  }
  return next;
}

async function joinClosed(deps: HandlerDeps, rootThreadId: string, joinKey: string): Promise<boolean> {
  const { thread } = await deps.threads.getThread(rootThreadId);
  return (thread.closedJoins ?? []).includes(joinKey);
}

/** Joins a root remembers as closed: a straggler of an older one would have to lag this many joins. */
const CLOSED_JOINS_KEPT = 16;

/**
 * Marks the join decided on the root thread (which owns the globals), bumping its version, so no
 * branch of the join writes globals after the decision (see writeRootGlobals in the pipeline). The
 * first attempt writes over `loaded`, the root as the report read it, when given: the write is
 * conditional on its version, so a root changed since costs a read and another attempt.
 */
async function closeJoin(
  deps: HandlerDeps,
  rootThreadId: string,
  joinKey: string,
  loaded?: VersionedThread,
): Promise<void> {
  for (let attempt = 1; ; attempt += 1) {
    const { thread, version } =
      attempt === 1 && loaded !== undefined ? loaded : await deps.threads.getThread(rootThreadId);
    const closed = thread.closedJoins ?? [];
    if (closed.includes(joinKey)) return;
    try {
      await deps.threads.updateThread(rootThreadId, version, {
        set: { closedJoins: [...closed, joinKey].slice(-CLOSED_JOINS_KEPT) },
      });
      return;
    } catch (error) {
      if (!(error instanceof StepthreadError && error.code === 'VERSION_CONFLICT') || attempt >= 50)
        throw error;
    }
  }
}

/** The parent's envelope after the FORK: its step is the FORK's step + 1. */
function parentJoinKey(event: TaskEvent): string {
  const { node, envelope } = event;
  if (node.forkId === undefined) {
    throw new StepthreadError('INVALID_TASK_INPUT', `JOIN ${node.id} needs forkId`, { nodeId: node.id });
  }
  return joinKeyFor(envelope.threadId, node.forkId, envelope.step);
}

/** Records the timeout; the timer branch's Fail state raises JoinTimeout after it (not an error here). */
export async function runJoinTimeout(event: TaskEvent, deps: HandlerDeps): Promise<Envelope> {
  const { envelope } = event;
  // A timeout decides with whatever reported before it: its entry ends the report order's prefix
  // the decision counts (countedPaths), unless a report decided before it.
  await deps.joins.recordBranchOutcome<BranchOutcome>(parentJoinKey(event), TIMER_ENTRY, {
    threadId: envelope.threadId,
    status: 'TIMEOUT',
    endedAt: deps.env.now(),
  });
  await closeJoin(deps, envelope.rootThreadId, parentJoinKey(event));
  const { error: _error, ...rest } = envelope;
  return nextEnvelope(rest, envelope.step, envelope.last);
}

/** Cancels a child that never finished; a child finishing concurrently keeps its own outcome. */
async function cancelChild(
  deps: HandlerDeps,
  entry: VersionedThread,
  reason: string,
  context: PublishContext,
): Promise<void> {
  let current: VersionedThread | undefined = entry;
  for (let attempt = 0; attempt < 3; attempt += 1) {
    current ??= await deps.threads.getThread(entry.thread.id);
    const { thread, version } = current;
    if (isTerminalStatus(thread.status)) return;
    let next = thread;
    const events = [];
    if (next.status === 'CREATED') {
      const started = transitionThread(next, 'RUNNING', deps.env);
      next = started.thread;
      events.push(started.event);
    }
    const cancelled = transitionThread(next, 'CANCELLED', deps.env, { reason });
    events.push(cancelled.event);
    try {
      await deps.threads.updateThread(thread.id, version, {
        set: {
          status: 'CANCELLED',
          ...(cancelled.thread.endTime ? { endTime: cancelled.thread.endTime } : {}),
        },
        append: { events },
      });
      await publishCommitted(deps.events, events, context);
      return;
    } catch (error) {
      if (!(error instanceof StepthreadError && error.code === 'VERSION_CONFLICT')) throw error;
      current = undefined;
    }
  }
  throw new StepthreadError('VERSION_CONFLICT', `child thread ${entry.thread.id} kept changing`);
}

function childIdsOf(event: TaskEvent): string[] {
  const fork = event.envelope.fork;
  if (event.node.overList && fork?.base !== undefined) {
    const base = fork.base;
    const count = fork.items?.length ?? fork.count ?? 0;
    return Array.from({ length: count }, (_, index) => itemThreadId(base, index));
  }
  const children = event.envelope.fork?.children;
  if (!Array.isArray(children) || children.length === 0) {
    throw new StepthreadError(
      'INVALID_TASK_INPUT',
      `JOIN ${event.node.id} needs fork.children in the envelope`,
      {
        nodeId: event.node.id,
      },
    );
  }
  return children;
}

/** The item threads that exist (an item that never started has none), or every path's child. */
async function childrenOf(deps: HandlerDeps, event: TaskEvent): Promise<VersionedThread[]> {
  if (!event.node.overList) return deps.threads.getThreads(childIdsOf(event));
  const found = await deps.threads.findThreads(childIdsOf(event));
  return found.filter((entry): entry is VersionedThread => entry !== undefined);
}

/**
 * The JOIN step's outcome from the engine's join: its output and events, with the parent as joined;
 * a join that did not complete fails the step with its code.
 */
function joinedStep(ctx: StepContext, joined: JoinResult, children: readonly Thread[]): NodeLogicResult {
  if (joined.result.status !== 'COMPLETED') {
    const error = joined.result.error;
    throw new StepthreadError(error?.code ?? 'JOIN_FAILED', error?.message ?? 'join failed', {
      nodeId: ctx.node.id,
    });
  }
  // The children are done: their global-write bookkeeping on the root goes with them.
  const { globalWriters: _writers, ...parent } = joined.parent;
  ctx.thread = withBranchCalls(parent, children);
  return { output: joined.result.output, events: joined.events };
}

/**
 * The parent with the model calls of the branches that finished before the join decided counted as
 * its own (a later one is as if still running: what it did depends on timing), so the scripted
 * provider's replies go on in order across a fork inside a loop.
 */
function withBranchCalls(parent: Thread, children: readonly Thread[]): Thread {
  const finished = children.filter((child) => branchStatusOf(child.status) !== undefined);
  const calls = joinedCalls(parent, finished);
  return calls === undefined
    ? parent
    : { ...parent, contextData: { ...parent.contextData, [LLM_CALLS_KEY]: calls } };
}

export const joinNode: NodeBehaviour = {
  relatedThreadIds: childIdsOf,
  // A list's item creates its thread on its first step: one that never started has none.
  relatedMayBeMissing: (event) => event.node.overList === true,
  // Only the branch results some expression reads: the others were never kept apart from their records.
  relatedResults: (event) => event.node.branchResults ?? 'all',
  // The join item (what decided it), in the same BatchGetItem as the threads.
  relatedItems: (event) => (event.node.overList ? [] : [joinItemKey(parentJoinKey(event))]),
  async logic(ctx) {
    const { node, envelope } = ctx;
    const config = parseConfig(joinConfigSchema, node);
    const timedOut = envelope.joinEnd?.Error === TASK_ERROR_NAMES.joinTimeout;
    if (node.overList) {
      const joined = joinItems({
        parent: ctx.thread,
        children: ctx.related.map(({ thread }) => thread),
        config,
        total: envelope.fork?.items?.length ?? envelope.fork?.count ?? 0,
        timedOut,
        nodeId: node.id,
        env: ctx.deps.env,
      });
      return joinedStep(
        ctx,
        joined,
        ctx.related.map(({ thread }) => thread),
      );
    }
    // Exactly the branches the decision counted: one that finished later is as if still running.
    const counted = countedPaths(joinStateOf(ctx.relatedItems[0]), config, config.forkPathIds.length);
    const children = ctx.related.map(({ thread }) => {
      const path = thread.contextData.forkPathId;
      const late = counted !== undefined && (path === undefined || !counted.includes(path));
      return late ? { ...thread, status: 'RUNNING' as const, nodeResults: {} } : thread;
    });
    const joined = joinThreads({
      parent: ctx.thread,
      children,
      config,
      timedOut,
      nodeId: node.id,
      env: ctx.deps.env,
    });
    return joinedStep(ctx, joined, children);
  },
  async afterCommit({ deps, event, related }) {
    const children = related ?? (await childrenOf(deps, event));
    for (const child of children) {
      if (!isTerminalStatus(child.thread.status)) {
        await cancelChild(deps, child, `join ${event.node.id} no longer needs this branch`, {
          executionId: event.envelope.executionId,
        });
      }
    }
  },
};
