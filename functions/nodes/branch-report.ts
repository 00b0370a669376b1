/**
 * A fork path's report to its JOIN, once the path's thread has finished (functions/nodes/join.ts):
 * record the path's outcome in the join item and, once the join can decide (or, with a timer branch,
 * once every path reported), say so in the result (`joinDecided`), so the Choice after the report
 * fails the path with `stepthread.JoinDecided` and the Parallel or Map stops waiting.
 *
 * Made by the JOIN function's `branch-done` / `branch-failed` Tasks, and by the step of a path's last
 * node itself when its Task carries the report (engine/asl/compile.ts): that step commits the path's
 * thread COMPLETED with its own result, then reports here, and a retry of it reports again (each
 * path is recorded once, and the decision is recomputed from what is recorded).
 */
import { JOIN_DECIDED_KEY } from '../../engine/asl/task-input.ts';
import { StepthreadError } from '../../engine/errors.ts';
import { joinConfigSchema } from '../../engine/model/schema.ts';
import {
  branchStatusOf,
  decideJoin,
  decidesEarly,
  type BranchOutcome as EngineBranchOutcome,
} from '../../engine/thread/index.ts';
import type { Envelope, Thread } from '../../engine/thread/types.ts';
import type { HandlerDeps } from '../handlers/deps.ts';
import type { IncomingEnvelope, TaskNode } from '../handlers/task.ts';
import type { BranchOutcome, JoinState } from '../stores/join-store.ts';
import type { VersionedThread } from '../stores/thread-store.ts';
import { parseConfig } from './config.ts';
import { itemThreadId, JOIN_KEY, listItemOf } from './fork.ts';

/** What a report is about: the JOIN's bookkeeping description, the path's envelope, and the envelope after it. */
export interface BranchReport {
  /** The JOIN as its bookkeeping tasks carry it (`path`, `paths`, config without the path lists). */
  readonly node: TaskNode;
  readonly envelope: IncomingEnvelope;
  /** The envelope the path goes on with (a decision adds `joinDecided` to it). */
  readonly next: Envelope;
}

/** A JOIN's config as its bookkeeping tasks carry it: the path list may be left out (`paths` counts them). */
export const bookkeepingConfigSchema = joinConfigSchema.partial({ forkPathIds: true });
type BookkeepingConfig = ReturnType<typeof bookkeepingConfigSchema.parse>;

/** The join item's entry for the timer branch (path ids contain `/`, never a leading `:`). */
export const TIMER_ENTRY = ':timeout';

export function joinKeyOf(child: Thread, nodeId: string): string {
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
  report: BranchReport,
  deps: HandlerDeps,
  child: Thread,
  joinKey: string,
  finishing: boolean,
): Promise<Envelope> {
  const { node, envelope, next } = report;
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
export async function closeJoin(
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

/** The join item `child` reports to and its path; coded errors when it is no path of `node`'s join. */
export function branchOf(node: TaskNode, child: Thread): { joinKey: string; pathId: string } {
  const config = parseConfig(bookkeepingConfigSchema, node);
  const joinKey = joinKeyOf(child, node.id);
  const pathId = node.path?.pathId ?? child.contextData.forkPathId;
  const onPath = node.path !== undefined || (pathId !== undefined && config.forkPathIds?.includes(pathId));
  if (pathId === undefined || !onPath) {
    throw new StepthreadError(
      'INVALID_FORK_PATH_IDS',
      `thread ${child.id} is on no path of join ${node.id}`,
      {
        nodeId: node.id,
      },
    );
  }
  return { joinKey, pathId };
}

/**
 * Reports `child`, finished, to its join: `finishing` when this invocation finished it (a retry that
 * found it finished reports again without counting a list item twice). `root`: the root thread as
 * read with the child, when at hand (closing the join writes over it).
 */
export async function reportBranch(
  report: BranchReport,
  deps: HandlerDeps,
  child: Thread,
  finishing: boolean,
  root?: VersionedThread,
): Promise<Envelope> {
  const { node, envelope, next } = report;
  // The compiled bookkeeping carries the path count and its own path, not the path lists.
  const config = parseConfig(bookkeepingConfigSchema, node);
  const total = typeof node.paths === 'number' ? node.paths : (config.forkPathIds?.length ?? 0);
  const { joinKey, pathId } = branchOf(node, child);
  if (node.overList) return reportItem(report, deps, child, joinKey, finishing);
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
  // Serial and parallel alike: each path runs inside a Parallel state whose Catch routes the
  // JoinDecided the path's Fail state raises to the JOIN (a serial fork is a chain of one-branch
  // Parallels).
  return verdict.decided ? decidedBy(next, verdict.reason) : next;
}
