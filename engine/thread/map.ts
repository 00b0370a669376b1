/**
 * FORK over a list (a FORK with `forEach`): one child thread per item, all on the FORK's one path,
 * and a JOIN that applies its strategy across the items.
 *
 * - Item i of path `p` has forkPathId `p[i]`; its thread scope holds the item under `itemVariable`
 *   (default `item`) and its index under `<itemVariable>Index`.
 * - The merged output is an array in item order: a completed item's output; `{"error": {code,
 *   message}}` for an item that failed; null for an item that had not finished when the join decided
 *   (stopped, cancelled or timed out).
 * - Conversation: the parent keeps its own conversation, unless the JOIN's `mainItem` names an item
 *   index; then a successful join waits for that item and, if it completed, continues with its
 *   conversation (as `mainPathId` does for static paths).
 * - An empty list runs no item; every strategy then completes with `[]`.
 */
import { restoreConversation } from '../conversation/index.ts';
import { StepthreadError } from '../errors.ts';
import { createEvent, type ThreadJoinedEvent } from '../events.ts';
import type { JoinConfig, JoinStrategy } from '../model/schema.ts';
import {
  type BranchOutcome,
  branchStatusOf,
  decideJoin,
  failedBranchesSummary,
  type JoinResult,
} from './join.ts';
import type { EngineEnv, Thread } from './types.ts';

export const DEFAULT_ITEM_VARIABLE = 'item';

/** The forkPathId of item `index` on path `pathId`. */
export function itemPathId(pathId: string, index: number): string {
  return `${pathId}[${index}]`;
}

/** The item index of a forkPathId `p[i]` on path `pathId`, or undefined. */
export function itemIndexOf(forkPathId: string | undefined, pathId: string): number | undefined {
  if (forkPathId === undefined || !forkPathId.startsWith(`${pathId}[`) || !forkPathId.endsWith(']')) {
    return undefined;
  }
  const index = Number(forkPathId.slice(pathId.length + 1, -1));
  return Number.isSafeInteger(index) && index >= 0 ? index : undefined;
}

/** The scope variables an item's thread starts with besides its parent's. */
export function itemVariables(itemVariable: string | undefined, item: unknown, index: number) {
  const name = itemVariable ?? DEFAULT_ITEM_VARIABLE;
  return { [name]: item, [`${name}Index`]: index };
}

/** The value a forEach gave, checked: an array, or FORK_EACH_NOT_ARRAY. */
export function forEachItems(value: unknown, nodeId: string): unknown[] {
  if (Array.isArray(value)) return value;
  const kind = value === null ? 'null' : typeof value;
  throw new StepthreadError(
    'FORK_EACH_NOT_ARRAY',
    `FORK ${nodeId}: forEach must give an array, got ${kind === 'object' ? 'an object' : kind}`,
    { nodeId },
  );
}

export interface ItemDecisionInput {
  strategy: JoinStrategy;
  threshold?: number;
  total: number;
  /** How the reporting item ended. */
  status: 'COMPLETED' | 'FAILED';
  /** Counts including this item, when the strategy needs them (SUCCESS_COUNT_THRESHOLD). */
  counts?: { completed: number; failed: number };
  /** Whether the join waits for a main item that has not completed yet. */
  waitingForMainItem?: boolean;
}

/**
 * Whether one item's outcome decides the join early (the Map stops at once). Only a decision a single
 * outcome settles, or the threshold counts, end it early; otherwise the Map runs to its end and the
 * JOIN decides over every item. Never wrong: each early decision is one no later outcome can change.
 */
export function decidesEarly(input: ItemDecisionInput): boolean {
  const { strategy, status } = input;
  switch (strategy) {
    case 'ALL_COMPLETED':
    case 'ALL_FAILED':
      // A failure (a completion) settles them as failed: no main item to wait for.
      return strategy === 'ALL_COMPLETED' ? status === 'FAILED' : status === 'COMPLETED';
    case 'ANY_COMPLETED':
      return status === 'COMPLETED' && !input.waitingForMainItem;
    case 'ANY_FAILED':
      return status === 'FAILED' && !input.waitingForMainItem;
    case 'SUCCESS_COUNT_THRESHOLD': {
      const { threshold, counts, total } = input;
      if (threshold === undefined || counts === undefined) return false;
      if (counts.failed > total - threshold) return true;
      return counts.completed >= threshold && !input.waitingForMainItem;
    }
  }
}

export interface JoinItemsOptions {
  parent: Thread;
  /** The item threads, any order; item i is matched by its forkPathId. */
  children: readonly Thread[];
  /** The JOIN's config; forkPathIds[0] is the fork's one path (global id). */
  config: JoinConfig;
  total: number;
  timedOut?: boolean;
  nodeId?: string;
  env: EngineEnv;
}

function slotOf(child: Thread | undefined): unknown {
  if (child === undefined) return null;
  if (child.status === 'COMPLETED') return child.output ?? null;
  if (child.status === 'FAILED') {
    const error = child.errors.at(-1);
    return { error: { code: error?.code ?? 'NODE_EXECUTION_FAILED', message: error?.message ?? 'failed' } };
  }
  return null;
}

/** A JOIN over the items of a FORK over a list (see the module comment for the rules). */
export function joinItems(options: JoinItemsOptions): JoinResult {
  const { parent, config, env, total } = options;
  const pathId = config.forkPathIds[0];
  if (pathId === undefined) throw new StepthreadError('INVALID_FORK_PATH_IDS', 'a join needs its path');
  const nodeOption = options.nodeId === undefined ? {} : { nodeId: options.nodeId };
  const items: (Thread | undefined)[] = new Array(total).fill(undefined);
  for (const child of options.children) {
    const index = itemIndexOf(child.contextData.forkPathId, pathId);
    if (index !== undefined && index < total) items[index] = child;
  }
  const outcomes: BranchOutcome[] = [];
  items.forEach((child, index) => {
    const status = child ? branchStatusOf(child.status) : undefined;
    if (status) outcomes.push({ forkPathId: itemPathId(pathId, index), status });
  });
  const output = items.map(slotOf);
  const at = env.now();
  // The event names the list, not each item thread (as the FORK's does): 10,000 ids would bring the
  // JOIN's step record near DynamoDB's 400 KB item limit. Item i's thread is derived from the FORK.
  const event = (
    status: 'COMPLETED' | 'FAILED' | 'TIMEOUT',
    reason: string,
    mainThreadId?: string,
  ): ThreadJoinedEvent =>
    createEvent('THREAD_JOINED', {
      threadId: parent.id,
      workflowId: parent.workflowId,
      at,
      ...nodeOption,
      strategy: config.joinStrategy,
      status,
      reason,
      childThreadIds: [],
      items: total,
      ...(mainThreadId === undefined ? {} : { mainThreadId }),
    });
  if (total === 0) {
    return {
      parent,
      result: { status: 'COMPLETED', output: [] },
      events: [event('COMPLETED', 'the list was empty')],
    };
  }
  const failure = (status: 'FAILED' | 'TIMEOUT', code: 'JOIN_FAILED' | 'JOIN_TIMEOUT', reason: string) => ({
    parent,
    result: { status, output, error: { code, message: reason, ...nodeOption } },
    events: [event(status, reason)],
  });
  const threshold = config.threshold;
  if (config.joinStrategy === 'SUCCESS_COUNT_THRESHOLD' && threshold !== undefined && threshold > total) {
    return failure('FAILED', 'JOIN_FAILED', `threshold ${threshold} is more than the ${total} items`);
  }
  const decision = decideJoin({
    strategy: config.joinStrategy,
    ...(threshold === undefined ? {} : { threshold }),
    total,
    outcomes,
  });
  if (!decision.decided) {
    const pending = total - outcomes.length;
    if ((config.timeout ?? 0) > 0 && options.timedOut) {
      return failure(
        'TIMEOUT',
        'JOIN_TIMEOUT',
        `timed out after ${config.timeout}s with ${pending} items pending`,
      );
    }
    return failure('FAILED', 'JOIN_FAILED', `join could not decide: ${pending} items have not finished`);
  }
  if (!decision.success) {
    const failed = items.flatMap((child, index) =>
      child && branchStatusOf(child.status) === 'FAILED'
        ? [
            {
              label: `item ${index} (path "${child.contextData.authorForkPathId ?? itemPathId(pathId, index)}")`,
              child,
            },
          ]
        : [],
    );
    return failure(
      'FAILED',
      'JOIN_FAILED',
      decision.reason + failedBranchesSummary(config.joinStrategy, failed),
    );
  }
  const main = config.mainItem === undefined ? undefined : items[config.mainItem];
  const restored = main?.status === 'COMPLETED' ? main : undefined;
  const conversation = restored ? restoreConversation(restored.conversation, parent.id) : parent.conversation;
  return {
    parent: { ...parent, conversation },
    result: { status: 'COMPLETED', output },
    events: [event('COMPLETED', decision.reason, restored?.id)],
  };
}
