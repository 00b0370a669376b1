/**
 * An interrupted run's page (its process is gone: a `dev` stopped or a `run` killed). The store still
 * says what the process last wrote — threads RUNNING, a question WAITING — but nothing runs any more:
 * those threads, and the node each was at, read INTERRUPTED, as the execution does.
 */
import { inFlightNodeOf } from '../../engine/graph/in-flight.ts';
import type { WorkflowGraph } from '../../engine/graph/types.ts';
import type { Thread } from '../../engine/thread/types.ts';
import type { NodeStatus } from '../deployed/execution-view.ts';

/** Statuses of a thread that had started and not ended (a CREATED one never started: it stays so). */
const IN_PROGRESS = new Set(['RUNNING', 'PAUSED']);
const NODE_IN_PROGRESS = new Set(['RUNNING', 'WAITING']);

type Head = Pick<Thread, 'id' | 'status' | 'currentNodeId' | 'lastEnvelope' | 'metadata'>;

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
