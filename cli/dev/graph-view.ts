/**
 * A workflow's graph as the console draws it: built nodes (subgraphs inlined), their edges (loop
 * back edges marked), fork/join regions with their paths, loops, and SUBGRAPHs with the nodes inlined
 * for each (the box the console draws around them, in the SUBGRAPH's status). Plain JSON, no layout:
 * the console lays it out.
 */
import { buildGraph } from '../../engine/graph/build.ts';
import type { GraphNode, WorkflowGraph } from '../../engine/graph/types.ts';
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
  /** Each SUBGRAPH node (it has no node of its own in the graph) and every node inlined for it. */
  subgraphs: { subgraphId: string; label: string; nodeIds: string[] }[];
}

/**
 * A node as drawn: an inlined subgraph's START and END are built as SUBGRAPH boundary nodes, but they
 * are its START and END, labelled as the child workflow names them (an ENTER carries the SUBGRAPH's
 * own name, for the events and hooks it runs under the SUBGRAPH's id).
 */
function drawnTypeAndLabel(node: GraphNode): { type: string; label: string } {
  if ('boundary' in node) {
    return node.boundary === 'ENTER'
      ? { type: 'START', label: node.authorId }
      : { type: 'END', label: node.name ?? node.authorId };
  }
  return { type: node.type, label: node.name ?? node.authorId };
}

/** The SUBGRAPHs, outermost first, each with its label and the nodes inside it (its boundaries too). */
function subgraphsOf(graph: WorkflowGraph): GraphView['subgraphs'] {
  const all = [...graph.nodes.values()];
  // Built innermost first (a child level is inlined before its SUBGRAPH is recorded).
  const depth = (id: string) => id.split('.').length;
  const outermostFirst = [...graph.subgraphs.values()].sort(
    (a, b) => depth(a.subgraphNodeId) - depth(b.subgraphNodeId),
  );
  return outermostFirst.map(({ subgraphNodeId, entryId }) => {
    const entry = graph.nodes.get(entryId);
    return {
      subgraphId: subgraphNodeId,
      label: entry?.name ?? subgraphNodeId.slice(subgraphNodeId.lastIndexOf('.') + 1),
      nodeIds: all
        .filter(
          (node) =>
            node.subgraphPath.includes(subgraphNodeId) ||
            ('boundary' in node && node.subgraphNodeId === subgraphNodeId),
        )
        .map((node) => node.id),
    };
  });
}

export function graphViewOf(workflow: Workflow): GraphView {
  const graph = buildGraph(workflow);
  const loopBacks = new Set([...graph.loops.values()].map((loop) => `${loop.endId}\n${loop.startId}`));
  const nodes: GraphViewNode[] = [...graph.nodes.values()].map((node) => {
    const config = (node as { config?: { userInteractionType?: string } }).config;
    return {
      id: node.id,
      ...drawnTypeAndLabel(node),
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
    subgraphs: subgraphsOf(graph),
  };
}
