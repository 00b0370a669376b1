/**
 * The static `node` each Task passes its handler: the node as built plus exactly what its handler needs
 * from the rest of the workflow (its profile, its tools, declarations, the paired fork/join), so handlers
 * never load the workflow file. Kept minimal: every byte here is repeated in the definition.
 */
import { describeTools } from '../conversation/tool-description.ts';
import { StepthreadError } from '../errors.ts';
import { type NodeReferences, nodeReferences } from '../expression/index.ts';
import type {
  GraphForkNode,
  GraphJoinNode,
  GraphNode,
  GraphPlainNode,
  SubgraphEntryNode,
  WorkflowGraph,
} from '../graph/types.ts';
import type { EnclosingSubgraph } from '../lifecycle.ts';
import { forkStrategyOf, type Hook, type Profile, type VariableDeclaration } from '../model/schema.ts';
import type {
  FailDescription,
  JoinBookkeepingDescription,
  JoinBranchDescription,
  JoinDescription,
  JoinTimeoutDescription,
  NodeDescription,
  StartDescription,
} from './task-input.ts';

export function describeNode(graph: WorkflowGraph, node: GraphNode): NodeDescription {
  const read = readOutputs(graph);
  const aliases = nodeAliasesOf(graph, node);
  const common = {
    id: node.id,
    ...(node.authorId !== node.id ? { authorId: node.authorId } : {}),
    ...hooksOf(node.hooks),
    ...(read !== 'all' && !read.has(node.id) ? { resultUnread: true as const } : {}),
    ...(Object.keys(aliases).length > 0 ? { nodeAliases: aliases } : {}),
    ...enclosingSubgraphsOf(graph, node),
  };
  if ('boundary' in node) {
    const { boundary, subgraphNodeId } = node;
    if (boundary === 'ENTER') {
      return { ...common, type: 'SUBGRAPH', boundary, subgraphNodeId, config: enterConfig(node) };
    }
    const writes = declarationsOf(graph, node, Object.keys(node.config.outputMapping ?? {}));
    return { ...common, type: 'SUBGRAPH', boundary, subgraphNodeId, config: node.config, ...writes };
  }
  switch (node.type) {
    case 'START':
      return {
        ...common,
        type: 'START',
        workflow: {
          id: graph.workflowId,
          version: graph.version,
          maxSteps: graph.maxSteps,
          ...(graph.budget !== undefined ? { budget: graph.budget } : {}),
          variables: [...graph.variables],
        },
      } satisfies StartDescription;
    case 'END':
      return { ...common, type: 'END', config: node.config ?? {} };
    case 'VARIABLE':
      return {
        ...common,
        type: node.type,
        config: node.config,
        ...declarationsOf(graph, node, [node.config.variableName]),
      };
    case 'CODE':
    case 'USER_INTERACTION':
      return {
        ...common,
        type: node.type,
        config: node.config,
        ...declarationsOf(graph, node, outputOf(node.config)),
      } as NodeDescription;
    case 'LLM': {
      const profileId = node.config.profileId ?? 'default';
      const toolNames = node.config.tools ?? [];
      return {
        ...common,
        type: 'LLM',
        config: { ...node.config, profileId },
        profile: profileFor(lookup(graph.profiles, profileId, node.id, 'profile'), node),
        ...(toolNames.length > 0
          ? {
              tools: Object.fromEntries(
                toolNames.map((name) => [name, lookup(graph.tools, name, node.id, 'tool')]),
              ),
            }
          : {}),
        ...declarationsOf(graph, node, outputOf(node.config)),
      };
    }
    case 'TOOL':
      return {
        ...common,
        type: 'TOOL',
        config: node.config,
        tool: lookup(graph.tools, node.config.toolName, node.id, 'tool'),
        ...declarationsOf(graph, node, outputOf(node.config)),
      };
    case 'LOOP_START':
      return { ...common, type: 'LOOP_START', config: node.config, ...loopDeclarationsOf(graph, node) };
    case 'CONTEXT_PROCESSOR': {
      const toolDescription = node.config.operation === 'clear' ? describeTools(graph.tools) : undefined;
      return {
        ...common,
        type: 'CONTEXT_PROCESSOR',
        config: node.config,
        ...(toolDescription === undefined ? {} : { toolDescription }),
      };
    }
    case 'ROUTE':
    case 'LOOP_END':
      return { ...common, type: node.type, config: node.config } as NodeDescription;
    case 'FORK': {
      const fork = node as GraphForkNode;
      const pair = graph.forks.get(fork.id);
      if (!pair) throw internal(`FORK ${fork.id} has no paired JOIN`);
      const join = graph.nodes.get(pair.joinId) as GraphJoinNode;
      return {
        ...common,
        type: 'FORK',
        config: fork.config,
        authorForkPathIds: [...fork.authorForkPathIds],
        joinId: join.id,
        joinConfig: join.config,
      };
    }
    case 'JOIN':
      return { ...common, ...joinFacts(graph, node as GraphJoinNode) };
    default: {
      const unexpected = node as GraphNode;
      throw internal(`node ${unexpected.id} has type ${unexpected.type}, which the graph build inlines`);
    }
  }
}

/** The description the join bookkeeping tasks of one path carry (constant size, see below). */
export function describeJoinBranch(
  graph: WorkflowGraph,
  joinId: string,
  index: number,
): JoinBranchDescription {
  const join = graph.nodes.get(joinId) as GraphJoinNode;
  const pathId = join.config.forkPathIds[index];
  const authorPathId = join.authorForkPathIds[index];
  if (pathId === undefined || authorPathId === undefined)
    throw internal(`JOIN ${joinId} has no path ${index}`);
  return { ...bookkeepingFacts(graph, join), path: { index, pathId, authorPathId } };
}

export function describeJoinTimeout(graph: WorkflowGraph, joinId: string): JoinTimeoutDescription {
  return bookkeepingFacts(graph, graph.nodes.get(joinId) as GraphJoinNode);
}

/** The JOIN's facts without its path lists, which every path's tasks would otherwise repeat. */
function bookkeepingFacts(graph: WorkflowGraph, join: GraphJoinNode): JoinBookkeepingDescription {
  const { forkPathIds, ...config } = join.config;
  const { forkId, forkStrategy, overList } = joinFacts(graph, join);
  return {
    id: join.id,
    ...(join.authorId !== join.id ? { authorId: join.authorId } : {}),
    type: 'JOIN',
    config,
    paths: forkPathIds.length,
    forkId,
    forkStrategy,
    ...(overList ? { overList } : {}),
  };
}

export function describeFail(graph: WorkflowGraph, stateName: string): FailDescription {
  return { id: stateName, type: 'END', workflowId: graph.workflowId };
}

function joinFacts(graph: WorkflowGraph, join: GraphJoinNode): Omit<JoinDescription, 'id' | 'hooks'> {
  const forkId = graph.joinToFork.get(join.id);
  const fork = forkId === undefined ? undefined : (graph.nodes.get(forkId) as GraphForkNode | undefined);
  if (!fork) throw internal(`JOIN ${join.id} has no paired FORK`);
  return {
    type: 'JOIN',
    config: join.config,
    authorForkPathIds: [...join.authorForkPathIds],
    authorMainPathId: join.authorMainPathId,
    forkId: fork.id,
    forkStrategy: forkStrategyOf(fork.config),
    ...(fork.config.forEach === undefined ? {} : { overList: true as const }),
    ...branchResultsOf(graph, fork.id),
  };
}

/**
 * The branch nodes of a fork whose results a JOIN must carry over to the parent: those some
 * expression reads (a branch node's result nothing reads was never kept apart from its step record).
 */
function branchResultsOf(graph: WorkflowGraph, forkId: string): { branchResults?: string[] } {
  const read = readOutputs(graph);
  if (read === 'all') return {};
  const pair = graph.forks.get(forkId);
  const inBranches = (pair?.paths ?? []).flatMap((path) => [...path.nodeIds]);
  return { branchResults: [...new Set(inBranches)].filter((id) => read.has(id)) };
}

function enterConfig(node: SubgraphEntryNode): {
  workflowId: string;
  workflowVersion: number;
  variables: VariableDeclaration[];
  inputMapping?: Record<string, string>;
} {
  return { ...node.config, variables: [...node.config.variables] };
}

const readOutputsCache = new WeakMap<WorkflowGraph, NodeReferences>();

/** The node outputs some expression of the workflow reads (its nodes' configs and hooks, its tools). */
function readOutputs(graph: WorkflowGraph): NodeReferences {
  let read = readOutputsCache.get(graph);
  if (read === undefined) {
    read = readOutputsOf(graph);
    readOutputsCache.set(graph, read);
  }
  return read;
}

/** The built ids whose outputs some expression reads, each reference resolved at its node's level. */
function readOutputsOf(graph: WorkflowGraph): NodeReferences {
  const fromTools = nodeReferences({ tools: graph.tools });
  if (fromTools === 'all') return 'all';
  const read = new Set(fromTools);
  for (const node of graph.nodes.values()) {
    const references = nodeReferences({ config: node.config, hooks: node.hooks });
    if (references === 'all') return 'all';
    for (const reference of references) {
      for (const id of resolveReference(graph, node, reference)) read.add(id);
    }
  }
  return read;
}

/**
 * The level a node's `{{nodes.<id>}}` references are written at, as a built-id prefix: its subgraph's
 * (`<subgraph>.`), '' at the top. A subgraph's EXIT renders its child's END output, so it reads at the
 * child's level; its ENTER evaluates inputMapping at the caller's, which its subgraphPath already is.
 */
function levelPrefix(node: GraphNode): string {
  if ('boundary' in node && node.boundary === 'EXIT') return `${node.subgraphNodeId}.`;
  const subgraph = node.subgraphPath.at(-1);
  return subgraph === undefined ? '' : `${subgraph}.`;
}

/**
 * The built ids a reference names at the node's level: inside a subgraph `nodes.acc` is the child's
 * node `<subgraph>.acc`, and `nodes.<a SUBGRAPH's id>` is that subgraph's output (its EXITs' result).
 */
function resolveReference(graph: WorkflowGraph, node: GraphNode, reference: string): string[] {
  const built = levelPrefix(node) + reference;
  const subgraph = graph.subgraphs.get(built);
  if (subgraph !== undefined) return [...subgraph.exitIds];
  return graph.nodes.has(built) ? [built] : [reference];
}

/** Author reference → built ids, for the references of this node that do not read as written. */
function nodeAliasesOf(graph: WorkflowGraph, node: GraphNode): Record<string, string[]> {
  const aliases: Record<string, string[]> = {};
  const references = nodeReferences({ config: node.config, hooks: node.hooks });
  if (references === 'all') return aliases;
  for (const reference of references) {
    const ids = resolveReference(graph, node, reference);
    if (ids.length !== 1 || ids[0] !== reference) {
      Object.defineProperty(aliases, reference, {
        value: ids,
        enumerable: true,
        writable: true,
        configurable: true,
      });
    }
  }
  return aliases;
}

/** See `Described.enclosingSubgraphs`; a boundary node belongs to the level around its subgraph. */
function enclosingSubgraphsOf(
  graph: WorkflowGraph,
  node: GraphNode,
): { enclosingSubgraphs?: EnclosingSubgraph[] } {
  const around = (subgraphId: string, hooks = graph.subgraphs.get(subgraphId)?.afterHooks ?? []) =>
    hooks.length > 0 ? { subgraphId, hooks: [...hooks] } : { subgraphId };
  const outer = [...node.subgraphPath].reverse().map((subgraphId) => around(subgraphId));
  // An EXIT runs its own SUBGRAPH's AFTER hooks as its own (build.ts), whether it fails or not.
  const own =
    'boundary' in node ? [around(node.subgraphNodeId, node.boundary === 'EXIT' ? [] : undefined)] : [];
  const enclosing = [...own, ...outer];
  return enclosing.length > 0 ? { enclosingSubgraphs: enclosing } : {};
}

function hooksOf(hooks: Hook[] | undefined): { hooks?: Hook[] } {
  return hooks && hooks.length > 0 ? { hooks } : {};
}

function outputOf(config: { outputVariable?: string | undefined }): string[] {
  return config.outputVariable === undefined ? [] : [config.outputVariable];
}

/**
 * Declarations visible where `node` runs: its innermost subgraph's variables first, then each enclosing
 * level's, then the workflow's (the same shadowing as the variable scopes).
 */
export function declarationsOf(
  graph: WorkflowGraph,
  node: GraphNode,
  names: readonly string[],
): { variables?: VariableDeclaration[] } {
  const levels: (readonly VariableDeclaration[])[] = [];
  for (const subgraphId of [...node.subgraphPath].reverse()) {
    const entryId = graph.subgraphs.get(subgraphId)?.entryId;
    const entry = entryId === undefined ? undefined : graph.nodes.get(entryId);
    if (entry && 'boundary' in entry && entry.boundary === 'ENTER') {
      // A child's own variables live in its subgraph frame whatever scope it declared (the ENTER
      // handler puts them there), so a write must go there too, not to the caller's thread scope.
      levels.push(
        entry.config.variables.map((declaration) =>
          declaration.scope === 'global' || declaration.scope === 'loop'
            ? declaration
            : { ...declaration, scope: 'subgraph' as const },
        ),
      );
    }
  }
  levels.push(graph.variables);
  const found: VariableDeclaration[] = [];
  for (const name of names) {
    for (const level of levels) {
      const declaration = level.find((candidate) => candidate.name === name);
      if (declaration) {
        found.push(declaration);
        break;
      }
    }
  }
  return found.length > 0 ? { variables: found } : {};
}

/** The `loop` declarations of the level a LOOP_START is on (its innermost subgraph's, or the workflow's). */
function loopDeclarationsOf(graph: WorkflowGraph, node: GraphNode): { variables?: VariableDeclaration[] } {
  const subgraphId = node.subgraphPath.at(-1);
  const entryId = subgraphId === undefined ? undefined : graph.subgraphs.get(subgraphId)?.entryId;
  const entry = entryId === undefined ? undefined : graph.nodes.get(entryId);
  const level =
    subgraphId === undefined
      ? graph.variables
      : entry && 'boundary' in entry && entry.boundary === 'ENTER'
        ? entry.config.variables
        : [];
  const found = level.filter((declaration) => declaration.scope === 'loop');
  return found.length > 0 ? { variables: found } : {};
}

/** A scripted profile's byNode can script every node; each LLM task needs only its own entries. */
function profileFor(profile: Profile, node: GraphPlainNode): Profile {
  if (profile.provider !== 'scripted' || profile.byNode === undefined) return profile;
  const own = Object.entries(profile.byNode).filter(([key]) => key === node.id || key === node.authorId);
  const { byNode: _all, ...rest } = profile;
  return own.length > 0 ? { ...rest, byNode: Object.fromEntries(own) } : rest;
}

function lookup<T>(table: Readonly<Record<string, T>>, name: string, nodeId: string, what: string): T {
  const value = Object.hasOwn(table, name) ? table[name] : undefined;
  if (value === undefined) throw internal(`node ${nodeId} names ${what} "${name}", which the graph lacks`);
  return value;
}

function internal(message: string): StepthreadError {
  return new StepthreadError('ASL_COMPILE_ERROR', `cannot compile: ${message}`);
}
