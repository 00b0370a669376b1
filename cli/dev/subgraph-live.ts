/**
 * Live statuses of SUBGRAPH nodes, which have no Task state of their own (they are inlined): a
 * SUBGRAPH runs from its ENTER's start to its EXIT's end, and fails with a node that fails inside it
 * on the thread that entered it (a FORK branch's failure is its JOIN's to judge), as its recorded
 * events say (engine/lifecycle.ts).
 */
import { buildGraph } from '../../engine/graph/build.ts';
import type { Workflow } from '../../engine/model/schema.ts';

export type SubgraphLiveStatus = 'RUNNING' | 'COMPLETED' | 'FAILED';

export interface LiveNode {
  status: string;
  threadId?: string;
}

/** Given a Task node's new status on a thread, the SUBGRAPH nodes whose status changes with it. */
export type SubgraphFollower = (
  change: { nodeId: string; status: string; threadId: string },
  current: (nodeId: string) => LiveNode | undefined,
) => { nodeId: string; status: SubgraphLiveStatus }[];

export function subgraphFollowerOf(workflow: Workflow): SubgraphFollower {
  const graph = buildGraph(workflow);
  if (graph.subgraphs.size === 0) return () => [];
  return ({ nodeId, status, threadId }, current) => {
    const node = graph.nodes.get(nodeId);
    if (node === undefined) return [];
    const own = 'boundary' in node ? node : undefined;
    if (own?.boundary === 'ENTER' && status === 'RUNNING') return [{ nodeId: own.subgraphNodeId, status }];
    if (own?.boundary === 'EXIT' && status === 'COMPLETED') return [{ nodeId: own.subgraphNodeId, status }];
    if (status !== 'FAILED') return [];
    const around = [...(own ? [own.subgraphNodeId] : []), ...[...node.subgraphPath].reverse()];
    return around.flatMap((subgraphId) => {
      const live = current(subgraphId);
      return live?.status === 'RUNNING' && live.threadId === threadId
        ? [{ nodeId: subgraphId, status: 'FAILED' as const }]
        : [];
    });
  };
}
