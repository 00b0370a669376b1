/**
 * The order an execution's threads are listed in (the dev console's execution page, `inspect`): the root, then each thread's fork children under
 * it in the order the FORK names its paths (`forkPathIds`), a FORK over a list's items by index. The
 * children of one FORK are created in the same step, so their start times tie and the store's
 * listing (by hashed id) decided their order: `split/risks` before `split/facts`, item 10 before 2.
 */
import type { StepthreadEvent } from '../engine/events.ts';
import type { Thread } from '../engine/thread/types.ts';
import { JOIN_KEY, listItemOf } from '../functions/nodes/fork.ts';
import { forkStepOfJoinKey } from '../functions/nodes/ids.ts';

/**
 * Each path's place among its FORK's paths, by its (graph-wide) path id: the built graph's forks
 * (engine/graph) or the console's (cli/dev/graph-view.ts), paths in forkPathIds order in both.
 */
export function pathOrderOf(
  forks: Iterable<{ readonly paths: readonly { readonly pathId: string }[] }>,
): Map<string, number> {
  return new Map(
    [...forks].flatMap((fork) => fork.paths.map((path, index) => [path.pathId, index] as const)),
  );
}

/** A FORK's step on its parent thread, read back: `readSteps` of a thread store. */
type ReadForkStep = (
  threadId: string,
  range: { from: number; to: number },
) => Promise<readonly { readonly events: readonly StepthreadEvent[] }[]>;

/**
 * Each path's place among its FORK's paths where no workflow says it (a run on a deployed stack):
 * from the THREAD_FORKED event each FORK recorded in its step on the parent, which names the paths in
 * forkPathIds order. One step record read per FORK node (its paths' ids are the same in every run of it).
 */
export async function pathOrderOfForkSteps(
  threads: readonly Thread[],
  readSteps: ReadForkStep,
): Promise<Map<string, number>> {
  const forkSteps = new Map<string, { parent: string; step: number }>();
  for (const thread of threads) {
    const joinKey = thread.metadata[JOIN_KEY];
    const parent = thread.metadata.parentThreadId;
    if (typeof joinKey !== 'string' || parent === undefined || !joinKey.startsWith(`${parent}/`)) continue;
    const step = forkStepOfJoinKey(joinKey);
    const forkNodeId = joinKey.slice(parent.length + 1, joinKey.lastIndexOf('/'));
    if (step !== undefined && !forkSteps.has(forkNodeId)) forkSteps.set(forkNodeId, { parent, step });
  }
  const order = new Map<string, number>();
  for (const { parent, step } of forkSteps.values()) {
    for (const record of await readSteps(parent, { from: step, to: step })) {
      for (const event of record.events) {
        if (event.type !== 'THREAD_FORKED') continue;
        for (const [index, path] of event.forkPathIds.entries()) order.set(path, index);
      }
    }
  }
  return order;
}

/** Where a fork child sits among its siblings: its FORK's run (a FORK in a loop forks again), path, item. */
function placeOf(thread: Thread, pathOrder: ReadonlyMap<string, number>): number[] {
  const joinKey = thread.metadata[JOIN_KEY];
  const forkStep = typeof joinKey === 'string' ? forkStepOfJoinKey(joinKey) : undefined;
  const item = listItemOf(thread);
  const pathId = thread.metadata.forkPathId ?? '';
  // An item's path id is `<path>[<index>]`.
  const path = item === undefined ? pathId : pathId.replace(/\[\d+\]$/, '');
  return [
    forkStep ?? Number.POSITIVE_INFINITY,
    pathOrder.get(path) ?? Number.POSITIVE_INFINITY,
    item?.index ?? Number.POSITIVE_INFINITY,
  ];
}

function comparePlaces(a: readonly number[], b: readonly number[]): number {
  for (const [i, value] of a.entries()) {
    if (value !== b[i]) return value < b[i]! ? -1 : 1;
  }
  return 0;
}

const byStart = (a: Thread, b: Thread) => a.startTime.localeCompare(b.startTime) || a.id.localeCompare(b.id);

/**
 * `threads` as the page lists them: the root first, then depth first, each thread followed by its
 * fork children in FORK order (start time where the graph does not say, e.g. a deployed workflow
 * whose file is gone). A thread whose parent is not listed comes after the root, by start time.
 */
export function inForkOrder(
  threads: readonly Thread[],
  rootId: string | undefined,
  pathOrder: ReadonlyMap<string, number>,
): Thread[] {
  const ids = new Set(threads.map((thread) => thread.id));
  const childrenOf = new Map<string, Thread[]>();
  const tops: Thread[] = [];
  for (const thread of threads) {
    const parent = thread.metadata.parentThreadId;
    // A copy of a fork branch names its source's parent and path too: it is no child of it.
    const forkChild = thread.metadata.forkPathId !== undefined && thread.metadata.copiedFrom === undefined;
    if (parent !== undefined && forkChild && ids.has(parent)) {
      childrenOf.set(parent, [...(childrenOf.get(parent) ?? []), thread]);
    } else {
      tops.push(thread);
    }
  }
  tops.sort((a, b) => Number(b.id === rootId) - Number(a.id === rootId) || byStart(a, b));
  const ordered: Thread[] = [];
  const visit = (thread: Thread) => {
    ordered.push(thread);
    const children = (childrenOf.get(thread.id) ?? []).map((child) => ({
      child,
      place: placeOf(child, pathOrder),
    }));
    children.sort((a, b) => comparePlaces(a.place, b.place) || byStart(a.child, b.child));
    for (const { child } of children) visit(child);
  };
  for (const top of tops) visit(top);
  return ordered;
}
