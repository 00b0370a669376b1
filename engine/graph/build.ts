/**
 * Builds the executable graph from a valid workflow: inlines SUBGRAPHs, makes node, loop and fork path
 * ids globally unique and deterministic, and resolves pairs, loops and transitions.
 */
import { StepthreadError } from '../errors.ts';
import {
  type Edge,
  forkStrategyOf,
  type Hook,
  type Profile,
  type ToolDefinition,
  type Workflow,
  type WorkflowNode,
} from '../model/schema.ts';
import { validateWorkflow } from '../validation/validate.ts';
import { buildFlow, type Flow, implicitTargets, successorsOf, uniqueLoopStarts } from './flow.ts';
import { analyzeForks } from './fork-regions.ts';
import { analyzeLoops } from './loops.ts';
import type {
  GraphForkNode,
  GraphForkPair,
  GraphJoinNode,
  GraphLoop,
  GraphNode,
  GraphNodeOrigin,
  GraphSubgraph,
  SubgraphExitNode,
  Transition,
  WorkflowGraph,
} from './types.ts';

/** Global fork path id: unique because built node ids are. */
export function globalPathId(forkId: string, authorPathId: string): string {
  return `${forkId}/${authorPathId}`;
}

/** Throws StepthreadError (the first error's code, every message listed) when the workflow is invalid. */
export function buildGraph(workflow: Workflow): WorkflowGraph {
  const validation = validateWorkflow(workflow);
  const first = validation.errors[0];
  if (first || !validation.workflow) {
    const details = validation.errors.map(
      (error) => `${error.code} at ${error.path ?? '(workflow)'}: ${error.message}`,
    );
    throw new StepthreadError(first?.code ?? 'SCHEMA_INVALID', `invalid workflow:\n${details.join('\n')}`, {
      ...(first?.nodeId ? { nodeId: first.nodeId } : {}),
    });
  }
  const valid = validation.workflow;
  const state: InlineState = { nodes: [], edges: [], profiles: {}, tools: {}, subgraphs: new Map() };
  inlineLevel(valid, state, { prefix: '', subgraphPath: [], profileNames: new Map(), toolNames: new Map() });

  const nodes = new Map<string, GraphNode>();
  for (const node of state.nodes) {
    if (nodes.has(node.id)) {
      throw new StepthreadError(
        'DUPLICATE_NODE_ID',
        `node id "${node.id}" appears twice once subgraphs are inlined`,
      );
    }
    nodes.set(node.id, node);
  }
  const flow = flatFlow(state.nodes, state.edges);
  const forks = pairForks(flow, nodes);
  const loops = resolveLoops(flow, state.nodes);
  const startId = state.nodes.find((node) => node.type === 'START')!.id;
  const endIds = state.nodes.filter((node) => node.type === 'END').map((node) => node.id);
  const joinToFork = new Map([...forks.values()].map((pair) => [pair.joinId, pair.forkId]));
  const transitions = new Map(state.nodes.map((node) => [node.id, transitionOf(node, flow, forks, loops)]));
  return {
    workflowId: valid.id,
    version: valid.version,
    ...(valid.description !== undefined ? { description: valid.description } : {}),
    maxSteps: valid.maxSteps!,
    ...(valid.budget !== undefined ? { budget: valid.budget } : {}),
    startId,
    endIds,
    order: flow.order,
    nodes,
    successors: flow.successors,
    predecessors: flow.predecessors,
    transitions,
    forks,
    joinToFork,
    loops,
    subgraphs: state.subgraphs,
    profiles: state.profiles,
    tools: state.tools,
    variables: valid.variables ?? [],
    triggers: valid.triggers ?? [],
  };
}

interface InlineState {
  nodes: GraphNode[];
  edges: Edge[];
  profiles: Record<string, Profile>;
  tools: Record<string, ToolDefinition>;
  subgraphs: Map<string, GraphSubgraph>;
}

interface LevelContext {
  /** '' at the top, `<subgraph built id>.` inside a subgraph. */
  prefix: string;
  subgraphPath: readonly string[];
  /** Author name → built name, for the names visible at this level (inner declarations shadow outer). */
  profileNames: ReadonlyMap<string, string>;
  toolNames: ReadonlyMap<string, string>;
}

/** Boundary nodes a level's START and ENDs turn into, when the level is a subgraph. */
interface BoundaryPlan {
  subgraphNode: WorkflowNode & { type: 'SUBGRAPH' };
  builtId: string;
  parentPath: readonly string[];
}

function inlineLevel(
  workflow: Workflow,
  state: InlineState,
  context: LevelContext,
  boundary?: BoundaryPlan,
): void {
  const { prefix } = context;
  const profileNames = new Map(context.profileNames);
  for (const [name, profile] of Object.entries(workflow.profiles ?? {})) {
    profileNames.set(name, prefix + name);
    state.profiles[prefix + name] = profile;
  }
  const toolNames = new Map(context.toolNames);
  for (const [name, tool] of Object.entries(workflow.tools ?? {})) {
    toolNames.set(name, prefix + name);
    state.tools[prefix + name] = tool;
  }
  const byId = new Map(workflow.nodes.map((node) => [node.id, node]));
  // Where control goes when it "enters" an author node: a SUBGRAPH is entered at its child's START.
  const entryOf = (authorId: string): string => {
    const node = byId.get(authorId);
    if (node?.type !== 'SUBGRAPH') return prefix + authorId;
    const childStart = node.config.workflow.nodes.find((child) => child.type === 'START')!;
    return `${prefix}${authorId}.${childStart.id}`;
  };
  const exitsOf = new Map<string, string[]>();
  const origin: GraphNodeOrigin = { authorId: '', subgraphPath: context.subgraphPath };
  const loopId = (authorLoopId: string): string => prefix + authorLoopId;
  const exits: string[] = [];

  for (const node of workflow.nodes) {
    const id = prefix + node.id;
    const here = { ...origin, authorId: node.id };
    if (boundary && node.type === 'START') {
      state.nodes.push({
        id,
        type: 'SUBGRAPH',
        boundary: 'ENTER',
        subgraphNodeId: boundary.builtId,
        ...here,
        subgraphPath: boundary.parentPath,
        ...describe(boundary.subgraphNode),
        ...hooksOf([...hooksFor(boundary.subgraphNode.hooks, 'BEFORE_EXECUTE'), ...(node.hooks ?? [])]),
        config: {
          workflowId: workflow.id,
          workflowVersion: workflow.version,
          variables: workflow.variables ?? [],
          ...(boundary.subgraphNode.config.inputMapping
            ? { inputMapping: boundary.subgraphNode.config.inputMapping }
            : {}),
        },
      });
      continue;
    }
    if (boundary && node.type === 'END') {
      const exit: SubgraphExitNode = {
        id,
        type: 'SUBGRAPH',
        boundary: 'EXIT',
        subgraphNodeId: boundary.builtId,
        ...here,
        subgraphPath: boundary.parentPath,
        ...describe(node),
        ...hooksOf([...(node.hooks ?? []), ...hooksFor(boundary.subgraphNode.hooks, 'AFTER_EXECUTE')]),
        config: {
          ...(node.config?.output !== undefined ? { output: node.config.output } : {}),
          ...(boundary.subgraphNode.config.outputMapping
            ? { outputMapping: boundary.subgraphNode.config.outputMapping }
            : {}),
        },
      };
      state.nodes.push(exit);
      exits.push(id);
      continue;
    }
    switch (node.type) {
      case 'SUBGRAPH': {
        const childPrefix = `${id}.`;
        const before = state.nodes.length;
        inlineLevel(
          node.config.workflow,
          state,
          { prefix: childPrefix, subgraphPath: [...context.subgraphPath, id], profileNames, toolNames },
          { subgraphNode: node, builtId: id, parentPath: context.subgraphPath },
        );
        const childExits = state.nodes
          .slice(before)
          .filter((built) => built.type === 'SUBGRAPH' && 'boundary' in built && built.subgraphNodeId === id)
          .filter((built) => 'boundary' in built && built.boundary === 'EXIT')
          .map((built) => built.id);
        exitsOf.set(node.id, childExits);
        state.subgraphs.set(id, {
          subgraphNodeId: id,
          entryId: entryOf(node.id),
          exitIds: childExits,
          afterHooks: hooksFor(node.hooks, 'AFTER_EXECUTE'),
        });
        break;
      }
      case 'FORK': {
        const fork: GraphForkNode = {
          ...node,
          ...here,
          id,
          config: {
            ...node.config,
            // Resolved here, so the compiled definition says what runs whether or not the file did.
            forkStrategy: forkStrategyOf(node.config),
            forkPathIds: node.config.forkPathIds.map((pathId) => globalPathId(id, pathId)),
            childNodeIds: node.config.childNodeIds.map(entryOf),
          },
          authorForkPathIds: node.config.forkPathIds,
        };
        state.nodes.push(fork);
        break;
      }
      case 'JOIN': {
        // Global path ids are filled in by pairForks, once the paired FORK is known.
        const authorMain = node.config.mainPathId ?? node.config.forkPathIds[0]!;
        const join: GraphJoinNode = {
          ...node,
          ...here,
          id,
          config: { ...node.config, mainPathId: authorMain },
          authorForkPathIds: node.config.forkPathIds,
          authorMainPathId: authorMain,
        };
        state.nodes.push(join);
        break;
      }
      case 'LOOP_START':
      case 'LOOP_END':
        state.nodes.push({
          ...node,
          ...here,
          id,
          config: { ...node.config, loopId: loopId(node.config.loopId) },
          authorLoopId: node.config.loopId,
        } as GraphNode);
        break;
      case 'ROUTE':
        state.nodes.push({
          ...node,
          ...here,
          id,
          config: {
            ...node.config,
            routes: node.config.routes.map((route) => ({
              ...route,
              targetNodeId: entryOf(route.targetNodeId),
            })),
            ...(node.config.defaultTargetNodeId !== undefined
              ? { defaultTargetNodeId: entryOf(node.config.defaultTargetNodeId) }
              : {}),
          },
        });
        break;
      case 'LLM':
        state.nodes.push({
          ...node,
          ...here,
          id,
          config: {
            ...node.config,
            profileId: profileNames.get(node.config.profileId ?? 'default')!,
            ...(node.config.tools ? { tools: node.config.tools.map((tool) => toolNames.get(tool)!) } : {}),
          },
        });
        break;
      case 'TOOL':
        state.nodes.push({
          ...node,
          ...here,
          id,
          config: { ...node.config, toolName: toolNames.get(node.config.toolName)! },
        });
        break;
      default:
        state.nodes.push({ ...node, ...here, id });
    }
  }

  for (const edge of workflow.edges ?? []) {
    const froms = exitsOf.get(edge.from) ?? [prefix + edge.from];
    for (const from of froms) state.edges.push({ from, to: entryOf(edge.to) });
  }
}

function describe(node: { name?: string; description?: string }): { name?: string; description?: string } {
  return {
    ...(node.name !== undefined ? { name: node.name } : {}),
    ...(node.description !== undefined ? { description: node.description } : {}),
  };
}

function hooksFor(hooks: Hook[] | undefined, type: Hook['hookType']): Hook[] {
  return (hooks ?? []).filter((hook) => hook.hookType === type);
}

function hooksOf(hooks: Hook[]): { hooks?: Hook[] } {
  return hooks.length > 0 ? { hooks } : {};
}

function flatFlow(nodes: readonly GraphNode[], edges: readonly Edge[]): Flow {
  const loopStarts = uniqueLoopStarts(
    nodes.filter((node): node is GraphNode & WorkflowNode => !('boundary' in node)),
  );
  return buildFlow(
    nodes.map((node) => ({
      id: node.id,
      type: node.type,
      implicit: 'boundary' in node ? [] : implicitTargets(node, loopStarts),
    })),
    edges,
  );
}

function pairForks(flow: Flow, nodes: Map<string, GraphNode>): Map<string, GraphForkPair> {
  const pairs = new Map<string, GraphForkPair>();
  for (const region of analyzeForks(flow).regions.values()) {
    const fork = nodes.get(region.forkId) as GraphForkNode;
    const join = nodes.get(region.joinId) as GraphJoinNode;
    const paths = region.branches.map((branch, index) => ({
      authorPathId: fork.authorForkPathIds[index]!,
      pathId: fork.config.forkPathIds[index]!,
      entryId: branch.entry,
      nodeIds: branch.nodes,
    }));
    const mainPathId = globalPathId(fork.id, join.authorMainPathId);
    nodes.set(join.id, {
      ...join,
      config: { ...join.config, forkPathIds: [...fork.config.forkPathIds], mainPathId },
    });
    pairs.set(fork.id, { forkId: fork.id, joinId: join.id, paths, mainPathId });
  }
  return pairs;
}

function resolveLoops(flow: Flow, nodes: readonly GraphNode[]): Map<string, GraphLoop> {
  const markers = (type: 'LOOP_START' | 'LOOP_END') =>
    nodes.flatMap((node) =>
      node.type === type && 'authorLoopId' in node ? [{ id: node.id, loopId: node.config.loopId }] : [],
    );
  const { loops } = analyzeLoops(markers('LOOP_START'), markers('LOOP_END'), flow);
  return new Map(
    [...loops.values()].map((loop) => [
      loop.loopId,
      { loopId: loop.loopId, startId: loop.startId, endId: loop.endId, bodyIds: loop.body },
    ]),
  );
}

function transitionOf(
  node: GraphNode,
  flow: Flow,
  forks: ReadonlyMap<string, GraphForkPair>,
  loops: ReadonlyMap<string, GraphLoop>,
): Transition {
  const next = successorsOf(flow, node.id);
  if (node.type === 'END') return { kind: 'end' };
  if (node.type === 'FORK') {
    const pair = forks.get(node.id)!;
    return { kind: 'fork', joinId: pair.joinId, paths: pair.paths };
  }
  if (node.type === 'ROUTE') {
    const routes = node.config.routes
      .map((route, index) => ({ route, index }))
      .sort((a, b) => (b.route.priority ?? 0) - (a.route.priority ?? 0) || a.index - b.index)
      .map(({ route }) => route);
    const fallback = node.config.defaultTargetNodeId;
    return { kind: 'route', routes, ...(fallback !== undefined ? { defaultTargetNodeId: fallback } : {}) };
  }
  if (node.type === 'LOOP_END') {
    const loop = loops.get(node.config.loopId)!;
    return { kind: 'loopEnd', loopStartId: loop.startId, exit: next.find((id) => id !== loop.startId)! };
  }
  return { kind: 'next', next: next[0]! };
}
