/**
 * What a step's lifecycle needs to report the SUBGRAPH nodes around it, which run no step of their own
 * (they are inlined): the one a boundary node opens or closes, and how many of those a failure here
 * fails that this thread entered.
 */
import type { NodeLifecycleOptions } from '../../engine/lifecycle.ts';
import type { Thread } from '../../engine/thread/types.ts';
import type { TaskNode } from './task.ts';

/**
 * The SUBGRAPHs of `enclosingSubgraphs` this thread is inside: one per pushed subgraph scope (a FORK's
 * branch starts with none), plus the one an ENTER is opening, whose scope it has not pushed yet.
 */
export function subgraphsEntered(
  node: Pick<TaskNode, 'boundary'>,
  thread: Pick<Thread, 'variables'>,
): number {
  return thread.variables.subgraph.length + (node.boundary === 'ENTER' ? 1 : 0);
}

export function subgraphBoundaryOf(
  node: Pick<TaskNode, 'boundary' | 'subgraphNodeId'>,
): Pick<NodeLifecycleOptions, 'subgraph'> {
  if (node.subgraphNodeId === undefined) return {};
  if (node.boundary === 'ENTER') return { subgraph: { opens: node.subgraphNodeId } };
  if (node.boundary === 'EXIT') return { subgraph: { closes: node.subgraphNodeId } };
  return {};
}
