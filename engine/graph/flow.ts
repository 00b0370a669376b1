/**
 * The control flow of one workflow level: explicit edges plus the implicit ones authors don't write
 * (FORK → its children, ROUTE → its targets and default, LOOP_END → its LOOP_START). Shared by validation
 * (on possibly partial workflows) and the graph build.
 */
import type { Edge, NodeType, WorkflowNode } from '../model/schema.ts';

/** What the flow needs to know about a node. `implicit` lists the targets its config implies. */
export interface FlowNodeInput {
  id: string;
  type: NodeType;
  implicit: readonly string[];
}

export interface Flow {
  /** Node ids in declaration order. */
  order: readonly string[];
  types: ReadonlyMap<string, NodeType>;
  successors: ReadonlyMap<string, readonly string[]>;
  predecessors: ReadonlyMap<string, readonly string[]>;
  /** FORK id → its branch entries, in path order. */
  forkEntries: ReadonlyMap<string, readonly string[]>;
  /** LOOP_END id → its LOOP_START id (the back edge). */
  backEdges: ReadonlyMap<string, string>;
}

/** Implicit targets of a node; `loopStarts` maps loopId → LOOP_START id (only for uniquely declared loops). */
export function implicitTargets(node: WorkflowNode, loopStarts: ReadonlyMap<string, string>): string[] {
  switch (node.type) {
    case 'FORK':
      return [...node.config.childNodeIds];
    case 'ROUTE': {
      const targets = node.config.routes.map((route) => route.targetNodeId);
      if (node.config.defaultTargetNodeId !== undefined) targets.push(node.config.defaultTargetNodeId);
      return targets;
    }
    case 'LOOP_END': {
      const start = loopStarts.get(node.config.loopId);
      return start === undefined ? [] : [start];
    }
    default:
      return [];
  }
}

/** loopId → LOOP_START id, for loop ids declared by exactly one LOOP_START. */
export function uniqueLoopStarts(nodes: readonly WorkflowNode[]): Map<string, string> {
  const starts = new Map<string, string[]>();
  for (const node of nodes) {
    if (node.type !== 'LOOP_START') continue;
    const list = starts.get(node.config.loopId) ?? [];
    list.push(node.id);
    starts.set(node.config.loopId, list);
  }
  const unique = new Map<string, string>();
  for (const [loopId, ids] of starts)
    if (ids.length === 1 && ids[0] !== undefined) unique.set(loopId, ids[0]);
  return unique;
}

/**
 * Builds the flow. Edges naming unknown nodes are dropped (validation reports them); successors keep
 * implicit targets first, in config order, then explicit edges in file order, without duplicates.
 */
export function buildFlow(nodes: readonly FlowNodeInput[], edges: readonly Edge[]): Flow {
  const types = new Map<string, NodeType>();
  const successors = new Map<string, string[]>();
  const predecessors = new Map<string, string[]>();
  const forkEntries = new Map<string, readonly string[]>();
  const backEdges = new Map<string, string>();
  for (const node of nodes) {
    types.set(node.id, node.type);
    successors.set(node.id, []);
    predecessors.set(node.id, []);
  }
  const link = (from: string, to: string): void => {
    const out = successors.get(from);
    const into = predecessors.get(to);
    if (!out || !into || out.includes(to)) return;
    out.push(to);
    into.push(from);
  };
  for (const node of nodes) {
    for (const target of node.implicit) link(node.id, target);
    if (node.type === 'FORK') forkEntries.set(node.id, node.implicit);
    const back = node.implicit[0];
    if (node.type === 'LOOP_END' && back !== undefined) backEdges.set(node.id, back);
  }
  for (const edge of edges) link(edge.from, edge.to);
  return { order: nodes.map((node) => node.id), types, successors, predecessors, forkEntries, backEdges };
}

export function successorsOf(flow: Flow, id: string): readonly string[] {
  return flow.successors.get(id) ?? [];
}

export function predecessorsOf(flow: Flow, id: string): readonly string[] {
  return flow.predecessors.get(id) ?? [];
}
