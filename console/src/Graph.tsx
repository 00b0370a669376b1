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
import { useLayoutEffect, useMemo, useRef, useState } from 'react';
import { formatAwsUsd, formatDuration, formatUsd, type GraphView, type NodeStatus } from './api.ts';

const NODE_WIDTH = 180;
const NODE_HEIGHT = 54;
/** An LLM node has a third line, its tokens and cost: the layout leaves it room. */
const LLM_NODE_HEIGHT = 70;

function heightOf(type: string | undefined): number {
  return type === 'LLM' ? LLM_NODE_HEIGHT : NODE_HEIGHT;
}

/** Where the layout put a node (its top left corner), and its height. */
interface Placed {
  x: number;
  y: number;
  height: number;
}
const PAD = 18;

/**
 * The first view's zoom stays within these: below MIN_FIT_ZOOM a node's 12 px label is unreadable
 * (fitting an 11-node chain took under 0.5), above MAX_FIT_ZOOM a 3-node graph was drawn at twice its size.
 * A graph too tall at MIN_FIT_ZOOM shows its top (START) and scrolls; the controls zoom further.
 */
const MIN_FIT_ZOOM = 0.75;
const MAX_FIT_ZOOM = 1;
/** Room around the graph in the panel. */
const VIEW_PAD = 24;
/** The panel is as tall as the graph needs at its zoom, within these. */
const MIN_PANEL_HEIGHT = 240;
const MAX_PANEL_HEIGHT = 720;

type StepNodeData = {
  label: string;
  type: string;
  detail?: string;
  status?: NodeStatus;
  selected: boolean;
};

/** `2 of 3 tool calls failed`, as the steps table says it of a step. */
function toolCallsFailed({ calls, failed }: { calls: number; failed: number }): string {
  return `${failed} of ${calls} tool call${calls === 1 ? '' : 's'} failed`;
}

function StepNode({ id, data }: NodeProps<Node<StepNodeData>>) {
  const status = data.status?.status ?? 'PENDING';
  const timing = data.status?.durationMs === undefined ? '' : formatDuration(data.status.durationMs);
  const runs = (data.status?.runs ?? 0) > 1 ? ` ×${data.status?.runs}` : '';
  // Completed, but not as if all went well: the model was shown errors (as the steps table's ⚠ says).
  const toolCalls = (data.status?.toolCalls?.failed ?? 0) > 0 ? data.status?.toolCalls : undefined;
  const title = [
    toolCalls && `${toolCallsFailed(toolCalls)}${(data.status?.runs ?? 0) > 1 ? ' over its runs' : ''}`,
    data.status?.awsUsd !== undefined &&
      `its steps on AWS, deployed: ${formatAwsUsd(data.status.awsUsd)} (an estimate)`,
  ].filter(Boolean);
  return (
    <div
      className={`step-node status-${status.toLowerCase()}${toolCalls ? ' warned' : ''}${data.selected ? ' selected' : ''}`}
      data-testid={`node-${id}`}
      data-status={status}
      {...(toolCalls ? { 'data-tool-calls-failed': toolCalls.failed } : {})}
      {...(title.length === 0 ? {} : { title: title.join('\n') })}
    >
      <Handle type="target" position={Position.Top} />
      <div className="step-node-title">{data.label}</div>
      <div className="step-node-meta">
        <span>{data.type.toLowerCase().replaceAll('_', ' ')}</span>
        <span>
          {status === 'PENDING' ? '' : status.toLowerCase()} {timing}
          {runs}
          {toolCalls && (
            <span className="node-warning" data-testid={`tool-calls-failed-of-node-${id}`}>
              ⚠ {toolCalls.failed}/{toolCalls.calls}
            </span>
          )}
        </span>
      </div>
      {data.status?.usage && (
        <div
          className="step-node-meta"
          data-testid={`cost-of-node-${id}`}
          title={`model calls over all its runs: ${data.status.usage.inputTokens + data.status.usage.outputTokens} tokens, ${data.status.usage.costUsd === undefined ? 'no price' : formatUsd(data.status.usage.costUsd)}${data.status.awsUsd === undefined ? '' : `; its steps on AWS ${formatAwsUsd(data.status.awsUsd)}`}`}
        >
          <span>{data.status.usage.inputTokens + data.status.usage.outputTokens} tokens</span>
          <span>
            {data.status.usage.costUsd === undefined ? 'no price' : formatUsd(data.status.usage.costUsd)}
            {data.status.awsUsd !== undefined && (
              <span data-testid={`aws-of-node-${id}`}> · aws {formatAwsUsd(data.status.awsUsd)}</span>
            )}
          </span>
        </div>
      )}
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

function layout(graph: GraphView): Map<string, Placed> {
  const g = new dagre.graphlib.Graph();
  g.setGraph({ rankdir: 'TB', nodesep: 40, ranksep: 50 });
  g.setDefaultEdgeLabel(() => ({}));
  for (const node of graph.nodes) g.setNode(node.id, { width: NODE_WIDTH, height: heightOf(node.type) });
  for (const edge of graph.edges) if (edge.kind === 'next') g.setEdge(edge.from, edge.to);
  dagre.layout(g);
  const positions = new Map<string, Placed>();
  for (const node of graph.nodes) {
    const placed = g.node(node.id);
    const height = heightOf(node.type);
    positions.set(node.id, { x: placed.x - NODE_WIDTH / 2, y: placed.y - height / 2, height });
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
  positions: Map<string, Placed>,
  pad: Padding,
): Node {
  const points = nodeIds.flatMap((nodeId) => positions.get(nodeId) ?? []);
  const minX = Math.min(...points.map((p) => p.x)) - pad.side;
  const minY = Math.min(...points.map((p) => p.y)) - pad.top;
  const maxX = Math.max(...points.map((p) => p.x)) + NODE_WIDTH + pad.side;
  const maxY = Math.max(...points.map((p) => p.y + p.height)) + pad.bottom;
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

interface Bounds {
  x: number;
  y: number;
  width: number;
  height: number;
}

/** The box every node and region box fits in. */
function boundsOf(nodes: readonly Node[]): Bounds {
  const boxes = nodes.map((node) => ({
    x: node.position.x,
    y: node.position.y,
    width: Number(node.style?.width ?? NODE_WIDTH),
    height: Number(node.style?.height ?? heightOf((node.data as { type?: string }).type)),
  }));
  const x = Math.min(...boxes.map((box) => box.x));
  const y = Math.min(...boxes.map((box) => box.y));
  return {
    x,
    y,
    width: Math.max(...boxes.map((box) => box.x + box.width)) - x,
    height: Math.max(...boxes.map((box) => box.y + box.height)) - y,
  };
}

const clamp = (value: number, min: number, max: number) => Math.min(max, Math.max(min, value));

/**
 * The panel's height and first view for a panel `width` wide: the whole graph when it fits at a
 * readable zoom (centred), else its top at MIN_FIT_ZOOM, centred across.
 */
function firstView(bounds: Bounds, width: number) {
  const room = (size: number) => Math.max(1, size - 2 * VIEW_PAD);
  const acrossZoom = clamp(room(width) / bounds.width, MIN_FIT_ZOOM, MAX_FIT_ZOOM);
  const height = clamp(bounds.height * acrossZoom + 2 * VIEW_PAD, MIN_PANEL_HEIGHT, MAX_PANEL_HEIGHT);
  const zoom = clamp(Math.min(acrossZoom, room(height) / bounds.height), MIN_FIT_ZOOM, MAX_FIT_ZOOM);
  const fitsDown = bounds.height * zoom <= room(height);
  return {
    height,
    viewport: {
      zoom,
      x: (width - bounds.width * zoom) / 2 - bounds.x * zoom,
      y: fitsDown ? (height - bounds.height * zoom) / 2 - bounds.y * zoom : VIEW_PAD - bounds.y * zoom,
    },
  };
}

export function Graph({ graph, status, selected, onSelect }: GraphProps) {
  // The first view depends on the panel's width: measured before the graph is drawn.
  const panel = useRef<HTMLDivElement>(null);
  const [width, setWidth] = useState<number>();
  useLayoutEffect(() => setWidth(panel.current?.clientWidth), []);
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
    const steps: Node[] = graph.nodes.map((node) => {
      const { x, y } = positions.get(node.id) ?? { x: 0, y: 0 };
      return {
        id: node.id,
        type: 'step',
        position: { x, y },
        data: {
          label: node.label,
          type: node.type,
          ...(node.detail ? { detail: node.detail } : {}),
          ...(status?.[node.id] ? { status: status[node.id] } : {}),
          selected: node.id === selected,
        },
        draggable: false,
      };
    });
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
  // Taken once: later refreshes (statuses) keep the view the user has moved to.
  const [view, setView] = useState<ReturnType<typeof firstView>>();
  useLayoutEffect(() => {
    if (width !== undefined && view === undefined && nodes.length > 0) {
      setView(firstView(boundsOf(nodes), width));
    }
  }, [width, view, nodes]);
  const fitOptions = { minZoom: MIN_FIT_ZOOM, maxZoom: MAX_FIT_ZOOM, padding: 0.05 };
  return (
    <div className="graph" data-testid="graph" ref={panel} style={view ? { height: view.height } : undefined}>
      {view && (
        <ReactFlow
          nodes={nodes}
          edges={edges}
          nodeTypes={nodeTypes}
          defaultViewport={view.viewport}
          // The controls and a pinch zoom out further, to see a tall graph whole.
          minZoom={0.1}
          maxZoom={2}
          // The wheel scrolls a graph taller than its panel, as it would a page (pinch or the
          // controls zoom).
          panOnScroll
          nodesConnectable={false}
          onNodeClick={(_event, node) => {
            if (node.type === 'step') onSelect?.(node.id);
          }}
        >
          <Background />
          <Controls showInteractive={false} fitViewOptions={fitOptions} />
        </ReactFlow>
      )}
    </div>
  );
}
