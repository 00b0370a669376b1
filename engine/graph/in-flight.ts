/**
 * The node a thread goes to after its last committed step: the one running (or asking) when its run
 * was stopped — a process killed, a run cancelled — whose own step left no trace. A thread's
 * `currentNodeId` names the node of its last step; what comes next is decided by the graph and the
 * choices that step's envelope carries (a ROUTE's target, a loop's exit).
 */
import type { Thread } from '../thread/types.ts';
import type { WorkflowGraph } from './types.ts';

type Head = Pick<Thread, 'currentNodeId' | 'lastEnvelope' | 'metadata'>;

/** The first node of a fork branch's thread, by its path. */
function branchEntryOf(graph: WorkflowGraph, pathId: string): string | undefined {
  for (const pair of graph.forks.values()) {
    const path = pair.paths.find((candidate) => candidate.pathId === pathId);
    if (path) return path.entryId;
  }
  return undefined;
}

/**
 * The node a thread was running when its run stopped: the one the state machine goes to after its
 * last step (the START or its branch's first node before any), as the step's envelope chose it.
 * Undefined where no single node runs on this thread then (after a FORK its branches run on their own
 * threads; a branch's last step hands over to its JOIN, which runs on the parent; after END), or when
 * its last step failed (the failed node is `currentNodeId` itself).
 */
export function inFlightNodeOf(graph: WorkflowGraph, thread: Head): string | undefined {
  const pathId = thread.metadata.forkPathId;
  const last = thread.currentNodeId;
  if (last === undefined) return pathId === undefined ? graph.startId : branchEntryOf(graph, pathId);
  const envelope = thread.lastEnvelope;
  if (envelope?.last?.status === 'FAILED') return undefined;
  const next = nextNodeOf(graph, last, envelope);
  if (pathId !== undefined && next !== undefined && graph.nodes.get(next)?.type === 'JOIN') return undefined;
  return next;
}

/** Where the state machine goes after `nodeId`'s step, by what the step's envelope chose. */
function nextNodeOf(
  graph: WorkflowGraph,
  nodeId: string,
  envelope: Thread['lastEnvelope'],
): string | undefined {
  const node = graph.nodes.get(nodeId);
  if (node?.type === 'LOOP_START' && envelope?.loop?.exit) {
    // No iteration left: on past the loop's LOOP_END.
    const loop = graph.loops.get(node.config.loopId);
    const after = loop && graph.transitions.get(loop.endId);
    return after?.kind === 'loopEnd' ? after.exit : undefined;
  }
  const transition = graph.transitions.get(nodeId);
  switch (transition?.kind) {
    case 'next':
      return transition.next;
    case 'route':
      return envelope?.route;
    case 'loopEnd':
      return envelope?.loop?.exit ? transition.exit : transition.loopStartId;
    default:
      return undefined;
  }
}
