/**
 * JOIN (seeds 000 and 001): decide by strategy, merge child outputs, restore the main path's
 * conversation into the parent. Conversations are never merged.
 */
import { restoreConversation } from '../conversation/index.ts';
import type { CodedError } from '../errors.ts';
import { StepthreadError } from '../errors.ts';
import { createEvent, type ThreadJoinedEvent } from '../events.ts';
import type { JoinConfig, JoinStrategy } from '../model/schema.ts';
import type { EngineEnv, NodeResult, Thread, ThreadStatus } from './types.ts';

export type BranchStatus = 'COMPLETED' | 'FAILED';

export interface BranchOutcome {
  forkPathId: string;
  status: BranchStatus;
}

export interface JoinDecisionInput {
  strategy: JoinStrategy;
  threshold?: number;
  /** Number of fork paths. */
  total: number;
  /** Branch results seen so far; a repeated forkPathId counts once (its last entry wins). */
  outcomes: readonly BranchOutcome[];
  /**
   * The main path (its conversation is restored). A join that succeeds by its strategy still waits
   * for this path to finish, so which conversation the parent continues with never depends on which
   * branch was faster; an ANY_FAILED join that succeeds waits for every path (see decideJoin).
   * Absent: the strategy alone decides (the JOIN itself, over the outcomes the runtime counted).
   */
  mainPathId?: string;
}

export type JoinDecision = { decided: false } | { decided: true; success: boolean; reason: string };

function countOutcomes(outcomes: readonly BranchOutcome[]): { completed: number; failed: number } {
  const latest = new Map<string, BranchStatus>();
  for (const o of outcomes) latest.set(o.forkPathId, o.status);
  let completed = 0;
  for (const status of latest.values()) if (status === 'COMPLETED') completed++;
  return { completed, failed: latest.size - completed };
}

/**
 * Whether a completed path's report decides the join only once every path has reported, so that no
 * path is left running for the decision to stop: ALL_COMPLETED without a timeout (a timeout's timer
 * branch runs until a decision stops it). The compiler ends such a path at its report, two states
 * sooner (engine/asl/compile.ts); a failed path's report may still decide early.
 */
export function completedPathEndsAtReport(config: Pick<JoinConfig, 'joinStrategy' | 'timeout'>): boolean {
  return config.joinStrategy === 'ALL_COMPLETED' && !((config.timeout ?? 0) > 0);
}

/**
 * Whether the join can already be decided from the outcomes seen so far. The runtime stops
 * waiting for the remaining branches as soon as this says `decided`.
 */
export function decideJoin(input: JoinDecisionInput): JoinDecision {
  const decision = decideByStrategy(input);
  const main = input.mainPathId;
  if (!decision.decided || !decision.success || main === undefined) return decision;
  if (!input.outcomes.some((outcome) => outcome.forkPathId === main)) return { decided: false };
  // ANY_FAILED merges every completed branch (seed 000): deciding at the first failure merged only
  // those finished by then, so the output's shape (one output, or several keyed by path) depended on
  // which branch was faster. ANY_COMPLETED and SUCCESS_COUNT_THRESHOLD merge a fixed count instead.
  if (input.strategy === 'ANY_FAILED' && new Set(input.outcomes.map((o) => o.forkPathId)).size < input.total)
    return { decided: false };
  return decision;
}

function decideByStrategy(input: JoinDecisionInput): JoinDecision {
  const { strategy, total } = input;
  if (!Number.isInteger(total) || total < 1) {
    throw new StepthreadError('INVALID_FORK_PATH_IDS', `a join needs at least one path (got ${total})`);
  }
  const { completed, failed } = countOutcomes(input.outcomes);
  if (completed + failed > total) {
    throw new StepthreadError(
      'INVALID_FORK_PATH_IDS',
      `${completed + failed} distinct branch outcomes for ${total} paths`,
    );
  }
  const pending = total - completed - failed;
  const done = (success: boolean, reason: string): JoinDecision => ({ decided: true, success, reason });
  switch (strategy) {
    case 'ALL_COMPLETED':
      if (failed > 0) return done(false, `${failed} of ${total} branches failed`);
      return pending === 0 ? done(true, `all ${total} branches completed`) : { decided: false };
    case 'ANY_COMPLETED':
      if (completed > 0) return done(true, `${completed} of ${total} branches completed`);
      return pending === 0 ? done(false, `all ${total} branches failed`) : { decided: false };
    case 'ALL_FAILED':
      if (completed > 0) return done(false, `${completed} of ${total} branches completed`);
      return pending === 0 ? done(true, `all ${total} branches failed`) : { decided: false };
    case 'ANY_FAILED':
      if (failed > 0) return done(true, `${failed} of ${total} branches failed`);
      return pending === 0 ? done(false, `all ${total} branches completed`) : { decided: false };
    case 'SUCCESS_COUNT_THRESHOLD': {
      const { threshold } = input;
      if (threshold === undefined || !Number.isInteger(threshold) || threshold < 1 || threshold > total) {
        throw new StepthreadError(
          'INVALID_JOIN_THRESHOLD',
          `SUCCESS_COUNT_THRESHOLD needs an integer threshold in 1..${total} (got ${threshold})`,
        );
      }
      if (completed >= threshold)
        return done(true, `${completed} of ${total} branches completed (threshold ${threshold})`);
      if (completed + pending < threshold) {
        return done(
          false,
          `only ${completed + pending} of ${total} branches can complete (threshold ${threshold})`,
        );
      }
      return { decided: false };
    }
  }
}

/** How a child's thread status counts for the join; undefined while the branch is still going. */
export function branchStatusOf(status: ThreadStatus): BranchStatus | undefined {
  switch (status) {
    case 'COMPLETED':
      return 'COMPLETED';
    case 'FAILED':
    case 'CANCELLED':
    case 'TIMEOUT':
      return 'FAILED';
    default:
      return undefined;
  }
}

export interface JoinOptions {
  parent: Thread;
  /** The children seen so far (any order; matched to paths by contextData.forkPathId). */
  children: readonly Thread[];
  config: JoinConfig;
  /** The runtime's wait ran out (only meaningful when config.timeout > 0). */
  timedOut?: boolean;
  /** The JOIN node (for errors and the event); default: the parent's currentNodeId. */
  nodeId?: string;
  env: EngineEnv;
}

export interface JoinOutcome {
  status: 'COMPLETED' | 'FAILED' | 'TIMEOUT';
  output: unknown;
  error?: CodedError;
}

export interface JoinResult {
  parent: Thread;
  result: JoinOutcome;
  events: ThreadJoinedEvent[];
}

/** Children by path id, in the config's path order; paths with no child are absent. */
function childrenByPath(children: readonly Thread[], forkPathIds: readonly string[]): Map<string, Thread> {
  const byPath = new Map<string, Thread>();
  for (const child of children) {
    const pathId = child.contextData.forkPathId;
    if (pathId !== undefined && forkPathIds.includes(pathId)) byPath.set(pathId, child);
  }
  return byPath;
}

/** The author's ids of the paths with no outcome yet, for messages. */
function pendingPaths(
  forkPathIds: readonly string[],
  children: readonly Thread[],
  outcomes: readonly BranchOutcome[],
): string {
  const finished = new Set(outcomes.map((outcome) => outcome.forkPathId));
  return forkPathIds
    .filter((pathId) => !finished.has(pathId))
    .map((pathId) => {
      const child = children.find((candidate) => candidate.contextData.forkPathId === pathId);
      return child?.contextData.authorForkPathId ?? pathId;
    })
    .join(', ');
}

/** How many failed branches a JOIN_FAILED names, and how much of each one's message. */
const FAILED_BRANCHES_SHOWN = 3;
const BRANCH_MESSAGE_LENGTH = 200;

/**
 * The failed branches behind a JOIN_FAILED, for its message: the first few, each with its path (the
 * author's id; an item of a list FORK is `<path>[<index>]`, item <index>) and its error's code and
 * message, cut to a bounded length. `labels` names each failed child as the message shows it.
 */
export function failedBranchesSummary(
  strategy: JoinStrategy,
  failed: ReadonlyArray<{ label: string; child: Thread }>,
): string {
  // ALL_FAILED and ANY_FAILED fail on branches that completed: the failed ones are not the reason.
  if (failed.length === 0 || strategy === 'ALL_FAILED' || strategy === 'ANY_FAILED') return '';
  const shown = failed.slice(0, FAILED_BRANCHES_SHOWN).map(({ label, child }) => {
    const error = child.errors.at(-1);
    if (error === undefined) return `${label}: ${child.status}`;
    const message =
      error.message.length > BRANCH_MESSAGE_LENGTH
        ? `${error.message.slice(0, BRANCH_MESSAGE_LENGTH)}…`
        : error.message;
    return `${label}: ${error.code}${error.nodeId ? ` at node ${error.nodeId}` : ''}: ${message}`;
  });
  const more = failed.length - shown.length;
  return `; ${shown.join('; ')}${more > 0 ? `; and ${more} more failed` : ''}`;
}

/** The failed branches of a join over paths, in path order, labelled by the author's path id. */
function failedPaths(children: readonly Thread[]): Array<{ label: string; child: Thread }> {
  return children
    .filter((child) => branchStatusOf(child.status) === 'FAILED')
    .map((child) => ({
      label: `path "${child.contextData.authorForkPathId ?? child.contextData.forkPathId}"`,
      child,
    }));
}

/**
 * Seed 000: no completed child → {}, one → its output, several → keyed by the author's path ids. A
 * path that ran no node (its FORK lists the JOIN as its first node) has no output: its key holds
 * null, since a stored value would drop a key without one.
 */
function mergeOutputs(completed: readonly Thread[]): unknown {
  if (completed.length === 0) return {};
  if (completed.length === 1) return completed[0]!.output;
  const merged: Record<string, unknown> = {};
  for (const child of completed) {
    const key = child.contextData.authorForkPathId ?? child.contextData.forkPathId ?? child.id;
    Object.defineProperty(merged, key, {
      value: child.output === undefined ? null : child.output,
      writable: true,
      enumerable: true,
      configurable: true,
    });
  }
  return merged;
}

/** The path whose conversation is restored (seed 001): `mainPathId`, default `forkPathIds[0]`. */
function mainPathOf(config: JoinConfig): string | undefined {
  return config.mainPathId ?? config.forkPathIds[0];
}

/**
 * The completed branches a successful join merges. ANY_COMPLETED merges one and
 * SUCCESS_COUNT_THRESHOLD `threshold`, as the seed's join, decided by that many completions, does:
 * the main path first when it completed (a successful join waits for it), then the others in
 * `forkPathIds` order. Merging every branch finished by the decision made the output's shape (one
 * output, or how many keyed by path) depend on which branch was faster.
 */
function mergedBranches(completed: readonly Thread[], config: JoinConfig): readonly Thread[] {
  const count =
    config.joinStrategy === 'ANY_COMPLETED'
      ? 1
      : config.joinStrategy === 'SUCCESS_COUNT_THRESHOLD'
        ? (config.threshold ?? completed.length)
        : completed.length;
  if (completed.length <= count) return completed;
  const mainPathId = mainPathOf(config);
  const isMain = (child: Thread) => child.contextData.forkPathId === mainPathId;
  const chosen = new Set(
    [...completed.filter(isMain), ...completed.filter((child) => !isMain(child))].slice(0, count),
  );
  // Keyed in path order, as every merge is.
  return completed.filter((child) => chosen.has(child));
}

/**
 * The child whose conversation the parent continues with (seed 001: `mainPathId`, default
 * `forkPathIds[0]`): restored only when it completed. A main path that failed, or had not finished
 * when a timed-out join gave up, leaves the parent's own conversation as it was (the seed restores
 * only a completed main thread). MAIN_THREAD_NOT_FOUND when the main path has no child thread at all.
 */
function selectMainChild(
  config: JoinConfig,
  byPath: ReadonlyMap<string, Thread>,
  nodeOption: { nodeId?: string },
): { pathId: string; child: Thread | undefined } {
  const pathId = mainPathOf(config);
  const child = pathId === undefined ? undefined : byPath.get(pathId);
  if (pathId === undefined || child === undefined) {
    throw new StepthreadError(
      'MAIN_THREAD_NOT_FOUND',
      `no child thread for main path "${pathId ?? '(none)'}"`,
      nodeOption,
    );
  }
  return { pathId, child: child.status === 'COMPLETED' ? child : undefined };
}

/**
 * Results of the nodes each child executed, so nodes after the join can read branch outputs. A
 * child holds only its own results (earlier ones it reads through its lineage), so all of them are
 * the branch's.
 */
function mergeNodeResults(parent: Thread, children: readonly Thread[]): Record<string, NodeResult> {
  const merged = { ...parent.nodeResults };
  for (const child of children) {
    for (const [nodeId, result] of Object.entries(child.nodeResults)) {
      // defineProperty: a node id such as `__proto__` stays plain data.
      Object.defineProperty(merged, nodeId, {
        value: result,
        enumerable: true,
        writable: true,
        configurable: true,
      });
    }
  }
  return merged;
}

/**
 * Applies a JOIN. Returns the updated parent (main path's conversation restored, branch node
 * results merged) on success; on FAILED/TIMEOUT the parent is returned unchanged, since it will
 * fail rather than continue. Throws MAIN_THREAD_NOT_FOUND, or CONVERSATION_MANAGER_MERGE_FAILED
 * from restoring a bad snapshot.
 */
export function joinThreads(options: JoinOptions): JoinResult {
  const { parent, config, env } = options;
  const nodeId = options.nodeId ?? parent.currentNodeId;
  const nodeOption = nodeId === undefined ? {} : { nodeId };
  const byPath = childrenByPath(options.children, config.forkPathIds);
  const inOrder = config.forkPathIds.flatMap((pathId) => {
    const child = byPath.get(pathId);
    return child ? [child] : [];
  });
  const outcomes = inOrder.flatMap((child): BranchOutcome[] => {
    const status = branchStatusOf(child.status);
    return status ? [{ forkPathId: child.contextData.forkPathId!, status }] : [];
  });
  const decision = decideJoin({
    strategy: config.joinStrategy,
    ...(config.threshold === undefined ? {} : { threshold: config.threshold }),
    total: config.forkPathIds.length,
    outcomes,
  });
  const completed = inOrder.filter((c) => c.status === 'COMPLETED');
  const output = mergeOutputs(mergedBranches(completed, config));
  const at = env.now();
  const event = (status: JoinOutcome['status'], reason: string, mainPathId?: string): ThreadJoinedEvent =>
    createEvent('THREAD_JOINED', {
      threadId: parent.id,
      workflowId: parent.workflowId,
      at,
      ...nodeOption,
      strategy: config.joinStrategy,
      status,
      reason,
      childThreadIds: inOrder.map((c) => c.id),
      ...(mainPathId === undefined ? {} : { mainPathId }),
    });
  const failure = (status: 'FAILED' | 'TIMEOUT', code: 'JOIN_FAILED' | 'JOIN_TIMEOUT', reason: string) => ({
    parent,
    result: { status, output, error: { code, message: reason, ...nodeOption } },
    events: [event(status, reason)],
  });

  if (!decision.decided) {
    const pending = config.forkPathIds.length - outcomes.length;
    if ((config.timeout ?? 0) > 0 && options.timedOut) {
      return failure(
        'TIMEOUT',
        'JOIN_TIMEOUT',
        `timed out after ${config.timeout}s with ${pending} of ${config.forkPathIds.length} branches not finished (${pendingPaths(config.forkPathIds, inOrder, outcomes)})`,
      );
    }
    // Every strategy decides once all branches finished, so this means the runtime joined too early.
    return failure('FAILED', 'JOIN_FAILED', `join could not decide: ${pending} branches have not finished`);
  }
  if (!decision.success)
    return failure(
      'FAILED',
      'JOIN_FAILED',
      decision.reason + failedBranchesSummary(config.joinStrategy, failedPaths(inOrder)),
    );

  const main = selectMainChild(config, byPath, nodeOption);
  const conversation = main.child
    ? restoreConversation(main.child.conversation, parent.id)
    : parent.conversation;
  return {
    parent: { ...parent, conversation, nodeResults: mergeNodeResults(parent, inOrder) },
    result: { status: 'COMPLETED', output },
    events: [event('COMPLETED', decision.reason, main.pathId)],
  };
}
