/**
 * The workflow graph: dagre lays out the built nodes top to bottom, React Flow draws them. Fork/join
 * regions, loops and SUBGRAPHs are drawn as labelled boxes behind their nodes (a SUBGRAPH, inlined,
 * has no node of its own: its box is it, in its status's colour); each node shows its live status and
 * timing when an execution is given.
 */
import dagre from '@dagrejs/dagre';
import {
  Background,
  Controls,
  type Edge,
  Handle,
  MarkerType,
  type Node,
  type NodeProps,
  Position,
  ReactFlow,
} from '@xyflow/react';
import { useMemo } from 'react';
import { formatDuration, type GraphView, type NodeStatus } from './api.ts';

const NODE_WIDTH = 180;
const NODE_HEIGHT = 54;
const PAD = 18;

type StepNodeData = {
  label: string;
  type: string;
  detail?: string;
  status?: NodeStatus;
  selected: boolean;
};

function StepNode({ id, data }: NodeProps<Node<StepNodeData>>) {
  const status = data.status?.status ?? 'PENDING';
  const timing = data.status?.durationMs === undefined ? '' : formatDuration(data.status.durationMs);
  const runs = (data.status?.runs ?? 0) > 1 ? ` ×${data.status?.runs}` : '';
  return (
    <div
      className={`step-node status-${status.toLowerCase()}${data.selected ? ' selected' : ''}`}
      data-testid={`node-${id}`}
      data-status={status}
    >
      <Handle type="target" position={Position.Top} />
      <div className="step-node-title">{data.label}</div>
      <div className="step-node-meta">
        <span>{data.type.toLowerCase().replaceAll('_', ' ')}</span>
        <span>
          {status === 'PENDING' ? '' : status.toLowerCase()} {timing}
          {runs}
        </span>
      </div>
      <Handle type="source" position={Position.Bottom} />
    </div>
  );
}

type RegionData = { label: string; kind: string; subgraphId?: string; status?: NodeStatus };

function RegionNode({ data }: NodeProps<Node<RegionData>>) {
  if (data.subgraphId === undefined) {
    return (
      <div className={`region region-${data.kind}`}>
        <span>{data.label}</span>
      </div>
    );
  }
  const status = data.status?.status ?? 'PENDING';
  const timing = data.status?.durationMs === undefined ? '' : ` ${formatDuration(data.status.durationMs)}`;
  return (
    <div
      className={`region region-subgraph status-${status.toLowerCase()}`}
      data-testid={`subgraph-${data.subgraphId}`}
      data-status={status}
    >
      <span>
        {data.label}
        {status === 'PENDING' ? '' : ` · ${status.toLowerCase()}${timing}`}
      </span>
    </div>
  );
}

const nodeTypes = { step: StepNode, region: RegionNode };

export interface GraphProps {
  graph: GraphView;
  status?: Record<string, NodeStatus>;
  selected?: string;
  onSelect?: (nodeId: string) => void;
}

function layout(graph: GraphView): Map<string, { x: number; y: number }> {
  const g = new dagre.graphlib.Graph();
  g.setGraph({ rankdir: 'TB', nodesep: 40, ranksep: 50 });
  g.setDefaultEdgeLabel(() => ({}));
  for (const node of graph.nodes) g.setNode(node.id, { width: NODE_WIDTH, height: NODE_HEIGHT });
  for (const edge of graph.edges) if (edge.kind === 'next') g.setEdge(edge.from, edge.to);
  dagre.layout(g);
  const positions = new Map<string, { x: number; y: number }>();
  for (const node of graph.nodes) {
    const placed = g.node(node.id);
    positions.set(node.id, { x: placed.x - NODE_WIDTH / 2, y: placed.y - NODE_HEIGHT / 2 });
  }
  return positions;
}

/** How many SUBGRAPHs deep inside `subgraphId` go (0: none in it), so its box clears theirs. */
function nestedDepth(subgraphId: string, graph: GraphView): number {
  const depth = (id: string) => id.split('.').length;
  const inside = graph.subgraphs.filter((other) => other.subgraphId.startsWith(`${subgraphId}.`));
  return Math.max(0, ...inside.map((other) => depth(other.subgraphId) - depth(subgraphId)));
}

/** Space between a box and the nodes in it (the top holds its label). */
interface Padding {
  side: number;
  top: number;
  bottom: number;
}

/** A fork or loop box: `depth` widens it, so a loop's box clears a fork's. */
function paddingAt(depth: number): Padding {
  const pad = PAD + depth * 8;
  return { side: pad, top: pad + 10, bottom: pad };
}

/**
 * A SUBGRAPH's box: wider than the fork and loop boxes inside it (and than its inner SUBGRAPHs'), but
 * tight above its START and below its END, so the boxes of two SUBGRAPHs in a row keep apart.
 */
function subgraphPadding(nestedDepth: number): Padding {
  return { side: PAD + 16 + nestedDepth * 10, top: 24, bottom: 10 };
}

function regionAround(
  id: string,
  label: string,
  kind: string,
  nodeIds: readonly string[],
  positions: Map<string, { x: number; y: number }>,
  pad: Padding,
): Node {
  const points = nodeIds.flatMap((nodeId) => positions.get(nodeId) ?? []);
  const minX = Math.min(...points.map((p) => p.x)) - pad.side;
  const minY = Math.min(...points.map((p) => p.y)) - pad.top;
  const maxX = Math.max(...points.map((p) => p.x)) + NODE_WIDTH + pad.side;
  const maxY = Math.max(...points.map((p) => p.y)) + NODE_HEIGHT + pad.bottom;
  return {
    id,
    type: 'region',
    position: { x: minX, y: minY },
    data: { label, kind },
    style: { width: maxX - minX, height: maxY - minY },
    draggable: false,
    selectable: false,
    zIndex: -1,
  };
}

export function Graph({ graph, status, selected, onSelect }: GraphProps) {
  const positions = useMemo(() => layout(graph), [graph]);
  const nodes = useMemo<Node[]>(() => {
    const regions: Node[] = [
      ...graph.forks.map((fork) =>
        regionAround(
          `region:${fork.forkId}`,
          `fork ${fork.forkId} → join ${fork.joinId}`,
          'fork',
          [fork.forkId, fork.joinId, ...fork.paths.flatMap((path) => path.nodeIds)],
          positions,
          paddingAt(0),
        ),
      ),
      ...graph.loops.map((loop) =>
        regionAround(
          `region:${loop.loopId}`,
          `loop ${loop.loopId}`,
          'loop',
          [loop.startId, loop.endId, ...loop.bodyIds],
          positions,
          paddingAt(1),
        ),
      ),
      // Behind the fork and loop boxes inside them.
      ...graph.subgraphs.map((subgraph) => {
        const box = regionAround(
          `region:${subgraph.subgraphId}`,
          `subgraph ${subgraph.label}`,
          'subgraph',
          subgraph.nodeIds,
          positions,
          subgraphPadding(nestedDepth(subgraph.subgraphId, graph)),
        );
        const live = status?.[subgraph.subgraphId];
        return {
          ...box,
          data: { ...box.data, subgraphId: subgraph.subgraphId, ...(live ? { status: live } : {}) },
          zIndex: -2,
        };
      }),
    ];
    const steps: Node[] = graph.nodes.map((node) => ({
      id: node.id,
      type: 'step',
      position: positions.get(node.id) ?? { x: 0, y: 0 },
      data: {
        label: node.label,
        type: node.type,
        ...(node.detail ? { detail: node.detail } : {}),
        ...(status?.[node.id] ? { status: status[node.id] } : {}),
        selected: node.id === selected,
      },
      draggable: false,
    }));
    return [...regions, ...steps];
  }, [graph, positions, status, selected]);
  const edges = useMemo<Edge[]>(
    () =>
      graph.edges.map((edge) => {
        const done = status?.[edge.to] !== undefined && status?.[edge.from] !== undefined;
        return {
          id: `${edge.from}->${edge.to}`,
          source: edge.from,
          target: edge.to,
          animated: status?.[edge.to]?.status === 'RUNNING',
          markerEnd: { type: MarkerType.ArrowClosed },
          className: `${edge.kind === 'loop' ? 'edge-loop' : ''}${done ? ' edge-taken' : ''}`,
          ...(edge.kind === 'loop' ? { label: 'next', type: 'smoothstep' } : {}),
        };
      }),
    [graph, status],
  );
  return (
    <div className="graph" data-testid="graph">
      <ReactFlow
        nodes={nodes}
        edges={edges}
        nodeTypes={nodeTypes}
        fitView
        // Far enough out for fitView to show a tall graph (subgraphs inlined) whole.
        minZoom={0.1}
        nodesConnectable={false}
        onNodeClick={(_event, node) => {
          if (node.type === 'step') onSelect?.(node.id);
        }}
      >
        <Background />
        <Controls showInteractive={false} />
      </ReactFlow>
    </div>
  );
}
