/**
 * JOIN and its bookkeeping actions (runtime-design.md, "FORK parallel" / "FORK serial"):
 *
 * - `branch-done` / `branch-failed` run on a child thread at the end of its branch: finish the child
 *   (COMPLETED with the branch's last output, or FAILED with the caught error), then report the path
 *   to the join (branch-report.ts): once the join can decide, the result says so (`joinDecided`) and
 *   the Choice after the report fails the path with `stepthread.JoinDecided` (a Fail state), so the
 *   Parallel stops waiting — for both fork strategies (a serial fork is a chain of one-branch
 *   Parallels with the same Catch). A decision is an outcome, not an error: the invocation succeeds,
 *   and Lambda's error metrics never count it. A path whose last node reports itself (its Task
 *   carries `report`) has no `branch-done`: that node's step commits the thread COMPLETED and reports
 *   (pipeline.ts); `branch-done` stays for paths that reach the JOIN from a Choice or a question.
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
import { StepthreadError } from '../../engine/errors.ts';
import type { NodeLogicResult } from '../../engine/lifecycle.ts';
import { joinConfigSchema } from '../../engine/model/schema.ts';
import {
  branchStatusOf,
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
import { type BranchOutcome, joinItemKey, joinStateOf } from '../stores/join-store.ts';
import type { StepRecord, VersionedThread } from '../stores/thread-store.ts';
import { branchOf, closeJoin, countedPaths, reportBranch, TIMER_ENTRY } from './branch-report.ts';
import { parseConfig } from './config.ts';
import { markThreadFailed } from './fail.ts';
import { itemThreadId } from './fork.ts';
import { joinKeyFor } from './ids.ts';
import { joinedCalls, LLM_CALLS_KEY } from './llm-calls.ts';

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

export async function runBranchReport(
  event: TaskEvent,
  deps: HandlerDeps,
  outcome: 'COMPLETED' | 'FAILED',
): Promise<Envelope> {
  const { node, envelope } = event;
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
  // Checked before the child is finished: a report to the wrong join changes nothing.
  branchOf(node, loaded);
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
  const { error: _error, ...rest } = envelope;
  const next = nextEnvelope(rest, envelope.step, envelope.last);
  return reportBranch({ node, envelope, next }, deps, child, finishing, root);
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
