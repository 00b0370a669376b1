/**
 * An interrupted run's page (its process is gone: a `dev` stopped or a `run` killed). The store still
 * says what the process last wrote — threads RUNNING, a question WAITING — but nothing runs any more:
 * those threads, and the node each was at, read INTERRUPTED, as the execution does.
 */
import type { WorkflowGraph } from '../../engine/graph/types.ts';
import type { Thread } from '../../engine/thread/types.ts';
import type { NodeStatus } from '../deployed/execution-view.ts';

/** Statuses of a thread that had started and not ended (a CREATED one never started: it stays so). */
const IN_PROGRESS = new Set(['RUNNING', 'PAUSED']);
const NODE_IN_PROGRESS = new Set(['RUNNING', 'WAITING']);

type Head = Pick<Thread, 'id' | 'status' | 'currentNodeId' | 'lastEnvelope' | 'metadata'>;

/** The first node of a fork branch's thread, by its path. */
function branchEntryOf(graph: WorkflowGraph, pathId: string): string | undefined {
  for (const pair of graph.forks.values()) {
    const path = pair.paths.find((candidate) => candidate.pathId === pathId);
    if (path) return path.entryId;
  }
  return undefined;
}

/**
 * The node a thread was running when its process stopped: the one the state machine goes to after
 * its last step (the START or its branch's first node before any), as the step's envelope chose it.
 * Undefined where no single node runs on this thread then (after a FORK its branches run on their own
 * threads; a branch's last step hands over to its JOIN, which runs on the parent).
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

/**
 * The page's threads and node statuses as they stand once the process is gone: each thread it left
 * in progress INTERRUPTED, and so the node it was at (running, or waiting for an answer).
 */
export function asInterrupted<T extends { threadId: string; status: string }>(
  graph: WorkflowGraph | undefined,
  threads: readonly T[],
  heads: readonly Head[],
  nodeStatus: Record<string, NodeStatus>,
): { threads: T[]; nodeStatus: Record<string, NodeStatus> } {
  const statuses: Record<string, NodeStatus> = {};
  for (const [nodeId, status] of Object.entries(nodeStatus)) {
    statuses[nodeId] = NODE_IN_PROGRESS.has(status.status) ? { ...status, status: 'INTERRUPTED' } : status;
  }
  for (const head of heads) {
    if (!IN_PROGRESS.has(head.status)) continue;
    const nodeId = graph && inFlightNodeOf(graph, head);
    if (nodeId === undefined) continue;
    statuses[nodeId] = { ...(statuses[nodeId] ?? { runs: 0 }), status: 'INTERRUPTED', threadId: head.id };
  }
  return {
    threads: threads.map((thread) =>
      IN_PROGRESS.has(thread.status) ? { ...thread, status: 'INTERRUPTED' } : thread,
    ),
    nodeStatus: statuses,
  };
}
