/**
 * The built graph: a validated workflow with SUBGRAPHs inlined, every edge explicit and every fork path
 * id globally unique. The ASL compiler and the runtime consume this, never the raw workflow file.
 */
import type {
  Budget,
  Hook,
  JoinConfig,
  NodeOfType,
  Profile,
  ToolDefinition,
  Trigger,
  VariableDeclaration,
  WorkflowNode,
} from '../model/schema.ts';

/** Where a built node came from. */
export interface GraphNodeOrigin {
  /** The node's id in its own workflow file (before subgraph prefixing). */
  authorId: string;
  /**
   * Built ids of the SUBGRAPH nodes this node sits in, outermost first; [] at the top level. Boundary
   * nodes belong to the enclosing level (they run before the scope is pushed / after it is popped).
   */
  subgraphPath: readonly string[];
}

type Inlined = 'FORK' | 'JOIN' | 'SUBGRAPH' | 'LOOP_START' | 'LOOP_END';

/** Any node kept as authored, apart from its id (prefixed when inlined) and rewritten references. */
export type GraphPlainNode = Exclude<WorkflowNode, { type: Inlined }> & GraphNodeOrigin;

export type GraphForkNode = NodeOfType<'FORK'> &
  GraphNodeOrigin & {
    /** config.forkPathIds holds the global ids; these are the author's, same order. */
    authorForkPathIds: readonly string[];
  };

export type GraphJoinNode = Omit<NodeOfType<'JOIN'>, 'config'> &
  GraphNodeOrigin & {
    /** forkPathIds are global (same as the paired FORK's); mainPathId is global and always set. */
    config: JoinConfig & { mainPathId: string };
    authorForkPathIds: readonly string[];
    /** The author's mainPathId, or forkPathIds[0] when the author left it out. */
    authorMainPathId: string;
  };

/** LOOP_START/LOOP_END with config.loopId made unique (prefixed like node ids when inlined). */
export type GraphLoopStartNode = NodeOfType<'LOOP_START'> & GraphNodeOrigin & { authorLoopId: string };
export type GraphLoopEndNode = NodeOfType<'LOOP_END'> & GraphNodeOrigin & { authorLoopId: string };

interface BoundaryCommon extends GraphNodeOrigin {
  id: string;
  type: 'SUBGRAPH';
  name?: string;
  description?: string;
  hooks?: Hook[];
  /** Built id of the SUBGRAPH node this boundary belongs to (the node itself is not in the graph). */
  subgraphNodeId: string;
}

/** The child workflow's START: pushes the subgraph variable scope and applies inputMapping. */
export interface SubgraphEntryNode extends BoundaryCommon {
  boundary: 'ENTER';
  config: {
    workflowId: string;
    workflowVersion: number;
    /** The child's variable declarations, initialised in the new subgraph scope. */
    variables: readonly VariableDeclaration[];
    inputMapping?: Record<string, string>;
  };
}

/** A child workflow END: computes the child's output, applies outputMapping, pops the scope. */
export interface SubgraphExitNode extends BoundaryCommon {
  boundary: 'EXIT';
  config: {
    /** The child END's `output` template. */
    output?: unknown;
    outputMapping?: Record<string, string>;
  };
}

export type GraphNode =
  | GraphPlainNode
  | GraphForkNode
  | GraphJoinNode
  | GraphLoopStartNode
  | GraphLoopEndNode
  | SubgraphEntryNode
  | SubgraphExitNode;

export interface GraphForkPath {
  /** The id the author wrote. */
  authorPathId: string;
  /** Globally unique: `<fork built id>/<author path id>`. */
  pathId: string;
  /** First node of the branch (the FORK's childNodeId, resolved to a subgraph entry if needed). */
  entryId: string;
  /** Every node of the branch, nested regions included, the JOIN excluded. */
  nodeIds: ReadonlySet<string>;
}

export interface GraphForkPair {
  forkId: string;
  joinId: string;
  paths: readonly GraphForkPath[];
  /** Global id of the main path (the JOIN's mainPathId, default the first path). */
  mainPathId: string;
}

export interface GraphLoop {
  /** Global loop id (as in the built nodes' config.loopId). */
  loopId: string;
  startId: string;
  endId: string;
  /** Nodes strictly between LOOP_START and LOOP_END. */
  bodyIds: ReadonlySet<string>;
}

export interface GraphSubgraph {
  subgraphNodeId: string;
  entryId: string;
  exitIds: readonly string[];
  /** The SUBGRAPH node's AFTER_EXECUTE hooks (its EXIT runs them; so does a child node that fails). */
  afterHooks: readonly Hook[];
}

export interface GraphRoute {
  condition: string;
  targetNodeId: string;
  priority?: number;
}

/** What happens after a node, in the terms the ASL compiler needs. */
export type Transition =
  | { kind: 'end' }
  | { kind: 'next'; next: string }
  | { kind: 'fork'; joinId: string; paths: readonly GraphForkPath[] }
  /** Routes in evaluation order: priority descending, ties in declaration order. */
  | { kind: 'route'; routes: readonly GraphRoute[]; defaultTargetNodeId?: string }
  | { kind: 'loopEnd'; loopStartId: string; exit: string };

export interface WorkflowGraph {
  workflowId: string;
  version: number;
  description?: string;
  /** The workflow's maxSteps, or DEFAULT_MAX_STEPS. */
  maxSteps: number;
  /** The top-level workflow's budget (a subgraph file's own is not used). */
  budget?: Budget;
  startId: string;
  endIds: readonly string[];
  /** Every node id, in a deterministic order (declaration order, subgraph nodes where the SUBGRAPH was). */
  order: readonly string[];
  nodes: ReadonlyMap<string, GraphNode>;
  /** Implicit edges included: FORK → branch entries, ROUTE → targets, LOOP_END → LOOP_START. */
  successors: ReadonlyMap<string, readonly string[]>;
  predecessors: ReadonlyMap<string, readonly string[]>;
  transitions: ReadonlyMap<string, Transition>;
  /** FORK id → its pair. */
  forks: ReadonlyMap<string, GraphForkPair>;
  /** JOIN id → its FORK id. */
  joinToFork: ReadonlyMap<string, string>;
  /** Global loop id → loop. */
  loops: ReadonlyMap<string, GraphLoop>;
  /** SUBGRAPH node built id → its boundary nodes. */
  subgraphs: ReadonlyMap<string, GraphSubgraph>;
  /**
   * Profiles and tools by the names nodes now use: top-level names as written, those declared inside a
   * subgraph prefixed `<subgraph id>.` (LLM profileId/tools and TOOL toolName are rewritten to match).
   */
  profiles: Readonly<Record<string, Profile>>;
  tools: Readonly<Record<string, ToolDefinition>>;
  variables: readonly VariableDeclaration[];
  triggers: readonly Trigger[];
}
