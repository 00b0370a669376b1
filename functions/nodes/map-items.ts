/**
 * Item threads of a FORK over a list, created lazily: the FORK writes one item source to the bucket
 * (what every item thread shares, then each item) and no thread; each item creates its own thread
 * `<base>-<index>` on its first step (or, when that step failed before, in its branch's failure
 * report), from two range reads of the source. The create is conditional, so a retry or a crash
 * after it finds the thread there; the JOIN reads the item threads that exist, an item that never
 * started having none.
 */
import { withThreadId } from '../../engine/conversation/index.ts';
import { StepthreadError } from '../../engine/errors.ts';
import { itemPathId, itemVariables, transitionThread } from '../../engine/thread/index.ts';
import type { Envelope, Thread } from '../../engine/thread/types.ts';
import { publishCommitted } from '../events/publisher.ts';
import type { HandlerDeps } from '../handlers/deps.ts';
import type { VersionedThread } from '../stores/thread-store.ts';

/** Metadata key naming the join bookkeeping item a child reports to. */
export const JOIN_KEY = 'joinKey';

/** contextData key of an item thread of a FORK over a list: `{ index, total }`. */
export const LIST_ITEM_KEY = 'listItem';

/** What every item thread of one FORK over a list shares: the first part of its item source. */
export interface ItemTemplate {
  /** An item thread as stored, but for its item: id `<base>`, on the FORK's path. */
  readonly thread: Thread;
  readonly total: number;
  /** The path (graph-wide id) and the author's id of it. */
  readonly pathId: string;
  readonly authorPathId: string;
  readonly itemVariable?: string;
}

/** The thread id of item `index` of a FORK over a list: `<base>-<index>`, base derived like a path's. */
export function itemThreadId(base: string, index: number): string {
  return `${base}-${index}`;
}

/** The item index of thread `threadId` of the FORK whose item threads are `<base>-<index>`. */
function indexIn(base: string, threadId: string): number | undefined {
  if (!threadId.startsWith(`${base}-`)) return undefined;
  const index = Number(threadId.slice(base.length + 1));
  return Number.isSafeInteger(index) && index >= 0 ? index : undefined;
}

function isTemplate(value: unknown): value is ItemTemplate {
  const template = value as Partial<ItemTemplate> | null;
  return (
    typeof template?.total === 'number' &&
    typeof template.pathId === 'string' &&
    typeof template.authorPathId === 'string' &&
    typeof template.thread?.id === 'string'
  );
}

/** The item thread the envelope's item names, as its first step creates it: the template with the item, its index and its path. */
export function itemThreadOf(
  template: ItemTemplate,
  item: unknown,
  threadId: string,
  deps: Pick<HandlerDeps, 'env'>,
): Thread {
  const base = template.thread;
  const index = indexIn(base.id, threadId);
  if (index === undefined || index >= template.total) {
    throw new StepthreadError(
      'INVALID_TASK_INPUT',
      `thread ${threadId} is no item of the list whose item threads are ${base.id}-<0..${template.total - 1}>`,
    );
  }
  const forkPathId = itemPathId(template.pathId, index);
  return {
    ...base,
    id: threadId,
    metadata: { ...base.metadata, forkPathId },
    contextData: {
      ...base.contextData,
      forkPathId,
      authorForkPathId: itemPathId(template.authorPathId, index),
      [LIST_ITEM_KEY]: { index, total: template.total },
    },
    variables: {
      ...base.variables,
      thread: { ...base.variables.thread, ...itemVariables(template.itemVariable, item, index) },
    },
    conversation: withThreadId(base.conversation, threadId),
    startTime: deps.env.now(),
    events: [],
    step: 0,
  };
}

/** Whether this thread is the one the FORK whose item it is would create (a retry's create). */
function sameItem(a: Thread, b: Thread): boolean {
  return (
    a.metadata.parentThreadId === b.metadata.parentThreadId &&
    a.metadata[JOIN_KEY] === b.metadata[JOIN_KEY] &&
    a.contextData.forkPathId === b.contextData.forkPathId
  );
}

/**
 * Creates the envelope's item thread (see the module comment), unless it is there: two parallel range
 * reads of the item source, then one conditional PutItem (its listing written first). `root` is the
 * run's root thread as just read: a decided join or a cancelled run creates the item CANCELLED.
 */
export async function createItemThread(
  deps: HandlerDeps,
  envelope: Pick<Envelope, 'threadId' | 'executionId'> & { item: NonNullable<Envelope['item']> },
  root: VersionedThread,
): Promise<void> {
  const { item: where } = envelope;
  if (deps.itemLists === undefined) {
    throw new StepthreadError('INVALID_TASK_INPUT', `thread ${envelope.threadId}: no item source store`);
  }
  const [template, item] = await Promise.all([
    deps.itemLists.readItemSource(where.source.key, where.source.template),
    deps.itemLists.readItemSource(where.source.key, where.at),
  ]);
  if (!isTemplate(template)) {
    throw new StepthreadError('INVALID_TASK_INPUT', `${where.source.key}: not an item source`);
  }
  const thread = itemThreadOf(template, item, envelope.threadId, deps);
  try {
    await deps.threads.createThread(thread, { listFirst: true });
  } catch (error) {
    if (!(error instanceof StepthreadError && error.code === 'CREATE_CONFLICT')) throw error;
    // An earlier attempt created it (its clock read differently): that thread stands.
    const { thread: existing } = await deps.threads.getThread(thread.id);
    if (!sameItem(existing, thread)) throw error;
    return;
  }
  // A straggler the Map no longer waits for (the join decided, or the run was cancelled, before the
  // item started) ends CANCELLED at once, as the JOIN or the cancel would have left it.
  const joinKey = thread.metadata[JOIN_KEY];
  const closed =
    root.thread.status === 'CANCELLED' ||
    (typeof joinKey === 'string' && (root.thread.closedJoins ?? []).includes(joinKey));
  if (closed) await cancelCreated(deps, thread, envelope.executionId);
}

/** Ends a thread just created (version 1) CANCELLED. */
async function cancelCreated(deps: HandlerDeps, thread: Thread, executionId: string): Promise<void> {
  const started = transitionThread(thread, 'RUNNING', deps.env);
  const reason = 'the join had decided, or the run was cancelled, before this item started';
  const cancelled = transitionThread(started.thread, 'CANCELLED', deps.env, { reason });
  const events = [started.event, cancelled.event];
  await deps.threads.updateThread(thread.id, 1, {
    set: { status: 'CANCELLED', ...(cancelled.thread.endTime ? { endTime: cancelled.thread.endTime } : {}) },
    append: { events },
  });
  await publishCommitted(deps.events, events, { executionId });
}
