/**
 * A workflow's graph as the console draws it: built nodes (subgraphs inlined), their edges (loop
 * back edges marked), fork/join regions with their paths, and loops. Plain JSON, no layout: the
 * console lays it out.
 */
import { buildGraph } from '../../engine/graph/build.ts';
import type { Workflow } from '../../engine/model/schema.ts';

export interface GraphViewNode {
  id: string;
  type: string;
  label: string;
  /** The SUBGRAPH nodes it sits in, outermost first. */
  subgraphPath: readonly string[];
  /** A USER_INTERACTION's kind, for the node's badge. */
  detail?: string;
}

export interface GraphViewEdge {
  from: string;
  to: string;
  kind: 'next' | 'loop';
}

export interface GraphView {
  workflowId: string;
  startId: string;
  nodes: GraphViewNode[];
  edges: GraphViewEdge[];
  forks: { forkId: string; joinId: string; paths: { pathId: string; nodeIds: string[] }[] }[];
  loops: { loopId: string; startId: string; endId: string; bodyIds: string[] }[];
}

export function graphViewOf(workflow: Workflow): GraphView {
  const graph = buildGraph(workflow);
  const loopBacks = new Set([...graph.loops.values()].map((loop) => `${loop.endId}\n${loop.startId}`));
  const nodes: GraphViewNode[] = [...graph.nodes.values()].map((node) => {
    const config = (node as { config?: { userInteractionType?: string } }).config;
    return {
      id: node.id,
      type: node.type,
      label: node.name ?? node.authorId,
      subgraphPath: node.subgraphPath,
      ...(node.type === 'USER_INTERACTION' && config?.userInteractionType
        ? { detail: config.userInteractionType }
        : {}),
    };
  });
  const edges: GraphViewEdge[] = [];
  for (const [from, targets] of graph.successors) {
    for (const to of targets) {
      edges.push({ from, to, kind: loopBacks.has(`${from}\n${to}`) ? 'loop' : 'next' });
    }
  }
  return {
    workflowId: graph.workflowId,
    startId: graph.startId,
    nodes,
    edges,
    forks: [...graph.forks.values()].map((pair) => ({
      forkId: pair.forkId,
      joinId: pair.joinId,
      paths: pair.paths.map((path) => ({ pathId: path.pathId, nodeIds: [...path.nodeIds] })),
    })),
    loops: [...graph.loops.values()].map((loop) => ({
      loopId: loop.loopId,
      startId: loop.startId,
      endId: loop.endId,
      bodyIds: [...loop.bodyIds],
    })),
  };
}
