/**
 * A lenient reading of a workflow file for the semantic checks: whatever parts parse are kept, so a file
 * with structural errors still gets every check that can run on it without producing follow-on noise.
 */
import { isRecord, type Path } from '../model/paths.ts';
import {
  type Edge,
  edgeSchema,
  NODE_TYPES,
  type NodeType,
  nodeSchema,
  toolSchema,
  type VariableDeclaration,
  variableDeclarationSchema,
  type WorkflowNode,
} from '../model/schema.ts';
import type { ToolEntry } from './tool-rules.ts';

export interface NodeView {
  path: Path;
  id: string;
  type: NodeType;
  /** The parsed node; undefined when its own fields failed the structural parse. */
  node?: WorkflowNode;
  /**
   * CODE only, when the node failed the structural parse for another field: its `code`, so whether
   * it compiles is still checked in the same run.
   */
  unparsedCode?: string;
  /** The node as written, when it failed the structural parse: its parts that parse are still checked. */
  unparsed?: Record<string, unknown>;
  /** SUBGRAPH only: the child workflow, read just as leniently. */
  child?: WorkflowView;
}

export interface EdgeView {
  path: Path;
  edge: Edge;
}

export interface WorkflowView {
  /** Path of this workflow object: [] at the top, `[..., 'config', 'workflow']` for a subgraph. */
  path: Path;
  nodes: NodeView[];
  /** Every string node id present in the file, in order, whatever the node's type or validity. */
  rawIds: Array<{ id: string; path: Path }>;
  edges: EdgeView[];
  /**
   * True when some node or edge could not be read well enough to know the control flow; flow checks
   * (reachability, cycles, pairing) are then skipped rather than reporting errors caused by the gap.
   */
  incomplete: boolean;
  /** Declared names; undefined when the section is unreadable (reference checks are then skipped). */
  profiles: ReadonlySet<string> | undefined;
  tools: ReadonlySet<string> | undefined;
  /** Tool declarations that passed the structural parse (the others are reported as SCHEMA_INVALID). */
  toolEntries: ToolEntry[];
  variables: Array<{ path: Path; declaration: VariableDeclaration }>;
}

// Types whose config shapes the control flow: if one of these fails to parse, the flow is unknown.
const FLOW_TYPES: ReadonlySet<NodeType> = new Set(['FORK', 'JOIN', 'ROUTE', 'LOOP_START', 'LOOP_END']);

export function viewWorkflow(data: Record<string, unknown>, path: Path): WorkflowView {
  const view: WorkflowView = {
    path,
    nodes: [],
    rawIds: [],
    edges: [],
    incomplete: false,
    profiles: namesOf(data.profiles),
    tools: namesOf(data.tools),
    toolEntries: [],
    variables: [],
  };
  if (isRecord(data.tools)) {
    for (const [name, raw] of Object.entries(data.tools)) {
      const parsed = toolSchema.safeParse(raw);
      if (parsed.success)
        view.toolEntries.push({ name, path: [...path, 'tools', name], definition: parsed.data });
    }
  }
  if (!Array.isArray(data.nodes)) view.incomplete = true;
  else {
    for (const [index, raw] of data.nodes.entries()) readNode(view, raw, [...path, 'nodes', index]);
  }

  if (data.edges !== undefined && !Array.isArray(data.edges)) view.incomplete = true;
  if (Array.isArray(data.edges)) {
    data.edges.forEach((raw, index) => {
      const parsed = edgeSchema.safeParse(raw);
      if (parsed.success) view.edges.push({ path: [...path, 'edges', index], edge: parsed.data });
      else view.incomplete = true;
    });
  }
  if (Array.isArray(data.variables)) {
    data.variables.forEach((raw, index) => {
      const parsed = variableDeclarationSchema.safeParse(raw);
      if (parsed.success)
        view.variables.push({ path: [...path, 'variables', index], declaration: parsed.data });
    });
  }
  return view;
}

function readNode(view: WorkflowView, raw: unknown, path: Path): void {
  if (!isRecord(raw) || typeof raw.id !== 'string' || raw.id === '') {
    view.incomplete = true;
    return;
  }
  view.rawIds.push({ id: raw.id, path });
  const type = raw.type;
  if (typeof type !== 'string' || !(NODE_TYPES as readonly string[]).includes(type)) {
    view.incomplete = true;
    return;
  }
  const nodeType = type as NodeType;
  const parsed = nodeSchema.safeParse(raw);
  const nodeView: NodeView = { path, id: raw.id, type: nodeType };
  if (parsed.success) nodeView.node = parsed.data as WorkflowNode;
  else {
    nodeView.unparsed = raw;
    if (FLOW_TYPES.has(nodeType)) view.incomplete = true;
    else if (nodeType === 'CODE' && isRecord(raw.config) && typeof raw.config.code === 'string')
      nodeView.unparsedCode = raw.config.code;
  }
  if (nodeType === 'SUBGRAPH' && isRecord(raw.config) && isRecord(raw.config.workflow)) {
    nodeView.child = viewWorkflow(raw.config.workflow, [...path, 'config', 'workflow']);
  }
  view.nodes.push(nodeView);
}

function namesOf(section: unknown): ReadonlySet<string> | undefined {
  if (section === undefined) return new Set();
  return isRecord(section) ? new Set(Object.keys(section)) : undefined;
}
