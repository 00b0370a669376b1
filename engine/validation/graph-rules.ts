/**
 * Rules about one workflow level's graph: ids, edges, reachability, cycles, loops and fork/join regions.
 * Flow checks run only on a view that is complete enough that their findings are real, not echoes of a
 * structural error already reported.
 */
import type { CodedError } from '../errors.ts';
import { reachable, stronglyConnectedComponents } from '../graph/algorithms.ts';
import {
  buildFlow,
  type Flow,
  type FlowNodeInput,
  implicitTargets,
  predecessorsOf,
  successorsOf,
  uniqueLoopStarts,
} from '../graph/flow.ts';
import { analyzeForks, type ForkProblem } from '../graph/fork-regions.ts';
import { analyzeLoops, type LoopMarker, type LoopProblem } from '../graph/loops.ts';
import { isRecord, type Path } from '../model/paths.ts';
import type { WorkflowNode } from '../model/schema.ts';
import { checkLoopSteps } from './loop-steps.ts';
import { codedError } from './report.ts';
import type { NodeView, WorkflowView } from './view.ts';

/** The run's step limit, for the loops whose length the file fixes (loop-steps.ts). */
export interface StepLimit {
  maxSteps: number;
  defaulted: boolean;
}

export function checkGraph(view: WorkflowView, limit?: StepLimit): CodedError[] {
  const errors: CodedError[] = [];
  const byId = new Map<string, NodeView>();
  for (const nodeView of view.nodes) if (!byId.has(nodeView.id)) byId.set(nodeView.id, nodeView);
  const pathOf = (id: string): Path => byId.get(id)?.path ?? [...view.path, 'nodes'];
  const at = (code: CodedError['code'], message: string, id: string, path: Path = pathOf(id)): void => {
    // An empty id names no node (a workflow with no nodes at all).
    errors.push(codedError(code, message, path, id === '' ? undefined : id));
  };

  let safe = !view.incomplete;
  const seen = new Set<string>();
  for (const { id, path } of view.rawIds) {
    if (seen.has(id)) {
      safe = false;
      at('DUPLICATE_NODE_ID', `node id "${id}" is used by more than one node`, id, path);
    }
    seen.add(id);
  }

  const starts = view.nodes.filter((nodeView) => nodeView.type === 'START');
  if (starts.length !== 1) {
    const where = starts[1]?.path ?? [...view.path, 'nodes'];
    errors.push(
      codedError(
        'START_NODE_COUNT',
        `a workflow needs exactly one START node, found ${starts.length}`,
        where,
        starts[1]?.id,
      ),
    );
  }

  if (!checkTargets(view, seen, errors)) safe = false;
  // A FORK without children has no branches to follow; its INVALID_FORK_PATH_IDS error says it all.
  if (view.nodes.some(({ node }) => node?.type === 'FORK' && node.config.childNodeIds.length === 0))
    safe = false;
  checkEdgeShapes(view, byId, errors);

  const parsed = view.nodes.flatMap((nodeView) => (nodeView.node ? [nodeView.node] : []));
  const markers = loopMarkers(parsed);
  const flow = safe ? flowOf(view) : undefined;
  const topLevelEnd = (id: string) => view.path.length === 0 && flow?.types.get(id) === 'END';
  const loops = analyzeLoops(markers.starts, markers.ends, flow, { exitAllowed: topLevelEnd });
  // A marker whose own config is in error is reported there; its partner is not "unpaired" for it.
  const unreadMarker = view.nodes.some(
    ({ node, type }) => node === undefined && (type === 'LOOP_START' || type === 'LOOP_END'),
  );
  for (const problem of loops.problems) {
    if (unreadMarker && (problem.kind === 'missing-start' || problem.kind === 'missing-end')) continue;
    at('INVALID_LOOP', loopProblemMessage(problem), loopProblemNode(problem));
  }
  if (!flow) return errors;
  if (view.path.length === 0) checkLoopScopeWrites(parsed, loops.loops, at);

  const start = starts.length === 1 ? starts[0]! : undefined;
  if (start) {
    const live = reachable([start.id], (id) => successorsOf(flow, id));
    for (const id of flow.order)
      if (!live.has(id)) at('UNREACHABLE_NODE', `node "${id}" cannot be reached from START`, id);
  }
  const unbounded = checkCycles(flow, at);
  checkPathsToEnd(flow, start?.id, unbounded, at);
  checkForks(flow, byId, at);
  if (limit && loops.problems.length === 0) {
    const nodes = new Map(parsed.map((node) => [node.id, node]));
    checkLoopSteps({ flow, loops: loops.loops, nodes, ...limit, topLevel: view.path.length === 0 }, at);
  }
  return errors;
}

function flowOf(view: WorkflowView): Flow {
  const loopStarts = uniqueLoopStarts(
    view.nodes.flatMap((nodeView) => (nodeView.node ? [nodeView.node] : [])),
  );
  const inputs: FlowNodeInput[] = view.nodes.map((nodeView) => ({
    id: nodeView.id,
    type: nodeView.type,
    implicit: nodeView.node ? implicitTargets(nodeView.node, loopStarts) : [],
  }));
  const typeOf = new Map(view.nodes.map((nodeView) => [nodeView.id, nodeView.type]));
  const edges = view.edges
    .map(({ edge }) => edge)
    .filter((edge) => typeOf.get(edge.from) !== 'END' && typeOf.get(edge.to) !== 'START');
  return buildFlow(inputs, edges);
}

/** Every edge, FORK child and ROUTE target names a node. False when any does not. */
function checkTargets(view: WorkflowView, ids: ReadonlySet<string>, errors: CodedError[]): boolean {
  let ok = true;
  for (const { edge, path } of view.edges) {
    for (const end of ['from', 'to'] as const) {
      if (ids.has(edge[end])) continue;
      ok = false;
      errors.push(
        codedError('UNKNOWN_EDGE_TARGET', `edge ${end} "${edge[end]}" names no node`, [...path, end]),
      );
    }
  }
  for (const { node, path } of view.nodes) {
    if (node?.type === 'FORK') {
      node.config.childNodeIds.forEach((child, index) => {
        if (ids.has(child)) return;
        ok = false;
        errors.push(
          codedError(
            'UNKNOWN_EDGE_TARGET',
            `childNodeIds entry "${child}" names no node`,
            [...path, 'config', 'childNodeIds', index],
            node.id,
          ),
        );
      });
    }
    if (node?.type === 'ROUTE') {
      const check = (target: string, at: Path): void => {
        if (ids.has(target)) return;
        ok = false;
        errors.push(
          codedError('UNKNOWN_ROUTE_TARGET', `route target "${target}" names no node`, at, node.id),
        );
      };
      node.config.routes.forEach((route, index) => {
        check(route.targetNodeId, [...path, 'config', 'routes', index, 'targetNodeId']);
      });
      if (node.config.defaultTargetNodeId !== undefined) {
        check(node.config.defaultTargetNodeId, [...path, 'config', 'defaultTargetNodeId']);
      }
    }
  }
  return ok;
}

/**
 * Explicit edges must be compilable: nothing leaves an END or enters START, FORK and ROUTE edges only
 * repeat what their config says, and every other node has one next node (LOOP_END: one exit).
 */
function checkEdgeShapes(
  view: WorkflowView,
  byId: ReadonlyMap<string, NodeView>,
  errors: CodedError[],
): void {
  const targetsSoFar = new Map<string, string[]>();
  for (const { edge, path } of view.edges) {
    const source = byId.get(edge.from);
    const target = byId.get(edge.to);
    const invalid = (message: string): void => {
      errors.push(codedError('INVALID_EDGE', message, path, edge.from));
    };
    if (!source || !target) continue;
    if (target.type === 'START') {
      invalid(`edge ${edge.from} → ${edge.to} enters START; nothing may lead back to START`);
      continue;
    }
    const node = source.node;
    if (source.type === 'END') {
      invalid(`edge ${edge.from} → ${edge.to} leaves an END node; END nodes have no outgoing edges`);
      continue;
    }
    if (source.type === 'FORK' || source.type === 'ROUTE') {
      if (!node) continue;
      const allowed = implicitTargets(node, new Map());
      if (!allowed.includes(edge.to)) {
        const what = source.type === 'FORK' ? 'its childNodeIds' : 'its route targets or defaultTargetNodeId';
        invalid(`edge ${edge.from} → ${edge.to}: a ${source.type} leads only to ${what}`);
      }
      continue;
    }
    if (source.type === 'LOOP_END' && target.type === 'LOOP_START') {
      // Read as written when a node failed its parse (a LOOP_START without maxIterations), so the
      // back edge is not reported as a second next node beside that node's own error.
      const loopId = loopIdOf(source);
      if (loopId !== undefined && loopIdOf(target) === loopId) continue; // repeats the implicit back edge
    }
    const earlier = targetsSoFar.get(edge.from) ?? [];
    if (earlier.includes(edge.to)) continue;
    if (earlier.length > 0) {
      invalid(
        `node "${edge.from}" already continues to "${earlier[0]}"; only ROUTE (conditions) and FORK (branches) have several next nodes`,
      );
      continue;
    }
    targetsSoFar.set(edge.from, [...earlier, edge.to]);
  }
}

/** A LOOP_START's or LOOP_END's `loopId`, from the parsed node or, when it failed its parse, as written. */
function loopIdOf(view: NodeView): string | undefined {
  if (view.node?.type === 'LOOP_START' || view.node?.type === 'LOOP_END') return view.node.config.loopId;
  const config = view.unparsed?.config;
  const loopId = isRecord(config) ? config.loopId : undefined;
  return typeof loopId === 'string' ? loopId : undefined;
}

/**
 * A loop closed on itself has a LOOP_END with no exit: its one edge is the exit, the way back to its
 * LOOP_START is implicit (a back edge written as the only edge is what LangGraph users draw).
 */
function loopExitHint(flow: Flow, component: readonly string[]): string {
  const loopEnd = component.find(
    (id) =>
      flow.types.get(id) === 'LOOP_END' &&
      successorsOf(flow, id).every((target) => flow.types.get(target) === 'LOOP_START'),
  );
  if (loopEnd === undefined) return '';
  return `; a LOOP_END goes back to its LOOP_START by itself, and its edge is the loop's exit: add an edge from "${loopEnd}" to the node after the loop`;
}

type At = (code: CodedError['code'], message: string, id: string) => void;

/** Reports each dead end (or closed group of nodes) once, not every node that leads into it. */
function checkPathsToEnd(
  flow: Flow,
  startId: string | undefined,
  unbounded: ReadonlySet<string>,
  at: At,
): void {
  const ends = flow.order.filter((id) => flow.types.get(id) === 'END');
  if (ends.length === 0) {
    at('NO_PATH_TO_END', 'the workflow has no END node', startId ?? flow.order[0] ?? '');
    return;
  }
  const finishing = reachable(ends, (id) => predecessorsOf(flow, id));
  const stuck = flow.order.filter((id) => !finishing.has(id));
  if (stuck.length === 0) return;
  const stuckSet = new Set(stuck);
  const next = (id: string): string[] => successorsOf(flow, id).filter((target) => stuckSet.has(target));
  const components = stronglyConnectedComponents(stuck, next);
  const componentOf = new Map<string, number>();
  components.forEach((component, index) => {
    for (const id of component) componentOf.set(id, index);
  });
  for (const [index, component] of components.entries()) {
    const closed = component.every((id) => next(id).every((target) => componentOf.get(target) === index));
    // A closed unbounded cycle is already reported as such; its missing exit is the same mistake.
    if (!closed || component.some((id) => unbounded.has(id))) continue;
    const first = component[0]!;
    const message =
      component.length === 1 && successorsOf(flow, first).length === 0
        ? `node "${first}" has no next node and is not an END`
        : `nodes ${component.map((id) => `"${id}"`).join(', ')} loop among themselves with no way to an END${loopExitHint(flow, component)}`;
    at('NO_PATH_TO_END', message, first);
  }
}

/**
 * Every cycle must pass a LOOP_START/LOOP_END pair (the back edge) or a ROUTE, which bound it.
 * Returns the nodes of the unbounded cycles found.
 */
function checkCycles(flow: Flow, at: At): Set<string> {
  const found = new Set<string>();
  const next = (id: string): readonly string[] => {
    if (flow.types.get(id) === 'ROUTE') return [];
    const back = flow.backEdges.get(id);
    return successorsOf(flow, id).filter((target) => target !== back);
  };
  for (const component of stronglyConnectedComponents(flow.order, next)) {
    const first = component[0]!;
    if (component.length === 1 && !next(first).includes(first)) continue;
    for (const id of component) found.add(id);
    at(
      'UNBOUNDED_CYCLE',
      `cycle through ${component.map((id) => `"${id}"`).join(', ')} has no LOOP_START/LOOP_END pair or ROUTE to bound it`,
      first,
    );
  }
  return found;
}

function checkForks(flow: Flow, byId: ReadonlyMap<string, NodeView>, at: At): void {
  const analysis = analyzeForks(flow);
  for (const forkId of analysis.unpairedForks) {
    at('UNPAIRED_FORK', `the branches of FORK "${forkId}" never meet at a JOIN`, forkId);
  }
  for (const [joinId, forks] of analysis.joinForks) {
    if (forks.length === 0) at('UNPAIRED_JOIN', `JOIN "${joinId}" closes no FORK`, joinId);
    if (forks.length > 1) {
      at(
        'UNPAIRED_JOIN',
        `JOIN "${joinId}" closes several FORKs (${forks.join(', ')}); each JOIN closes one`,
        joinId,
      );
    }
  }
  for (const problem of analysis.problems) {
    const [id, message] = forkProblemMessage(problem);
    at('FORK_BRANCH_ESCAPES', message, id);
  }
  for (const region of analysis.regions.values()) {
    if ((analysis.joinForks.get(region.joinId)?.length ?? 0) !== 1) continue;
    const fork = byId.get(region.forkId)?.node;
    const join = byId.get(region.joinId)?.node;
    if (fork?.type !== 'FORK' || join?.type !== 'JOIN') continue;
    const forkIds = fork.config.forkPathIds;
    const joinIds = join.config.forkPathIds;
    // A FORK whose own path ids are broken is reported by INVALID_FORK_PATH_IDS; comparing would only echo it.
    if (forkIds.length === 0 || forkIds.length !== fork.config.childNodeIds.length || joinIds.length === 0)
      continue;
    if (forkIds.length !== joinIds.length || forkIds.some((id, index) => joinIds[index] !== id)) {
      at(
        'FORK_JOIN_MISMATCH',
        `JOIN "${join.id}" lists forkPathIds [${joinIds.join(', ')}] but its FORK "${fork.id}" has [${forkIds.join(', ')}] (order matters)`,
        join.id,
      );
    }
    const overList = fork.config.forEach !== undefined;
    const { threshold } = join.config;
    if (!overList && join.config.joinStrategy === 'SUCCESS_COUNT_THRESHOLD' && threshold !== undefined) {
      if (threshold > forkIds.length && forkIds.length === 1) {
        at(
          'INVALID_JOIN_THRESHOLD',
          `threshold must be between 1 and the number of paths (1), got ${threshold}`,
          join.id,
        );
      }
    }
    if (join.config.mainItem !== undefined && !overList) {
      at(
        'INVALID_MAIN_ITEM',
        `JOIN "${join.id}" sets mainItem, but its FORK "${fork.id}" has no forEach (use mainPathId)`,
        join.id,
      );
    }
    if (overList && join.config.mainPathId !== undefined && join.config.mainPathId !== forkIds[0]) {
      at(
        'INVALID_MAIN_ITEM',
        `JOIN "${join.id}" closes a FORK over a list: name the main item with mainItem (an index), not mainPathId`,
        join.id,
      );
    }
    // A Distributed Map runs its items as child executions of the top-level state machine: it cannot
    // sit inside another fork's branch (a Parallel branch or an inline Map's item).
    if (overList && fork.config.mode === 'distributed') {
      for (const outer of analysis.regions.values()) {
        if (outer.forkId === region.forkId) continue;
        if (outer.branches.some((branch) => branch.nodes.has(region.forkId))) {
          at(
            'FORK_EACH_NESTING',
            `FORK "${fork.id}" (mode "distributed") is inside a branch of FORK "${outer.forkId}"; a distributed fork must be at the top level`,
            fork.id,
          );
        }
      }
    }
  }
}

function forkProblemMessage(problem: ForkProblem): [string, string] {
  switch (problem.kind) {
    case 'misses-join':
      return [
        problem.entry,
        `the branch of FORK "${problem.forkId}" starting at "${problem.entry}" never reaches its JOIN "${problem.joinId}"`,
      ];
    case 'reaches-end':
      return [
        problem.nodeId,
        `the branch of FORK "${problem.forkId}" starting at "${problem.entry}" reaches END "${problem.nodeId}" instead of its JOIN`,
      ];
    case 'returns-to-fork':
      return [
        problem.forkId,
        `the branch of FORK "${problem.forkId}" starting at "${problem.entry}" leads back to the FORK`,
      ];
    case 'entered-from-outside':
      return [
        problem.nodeId,
        `node "${problem.nodeId}" in the branch of FORK "${problem.forkId}" starting at "${problem.entry}" is also reached from "${problem.from}" outside the branch`,
      ];
    case 'branches-merge':
      return [
        problem.nodeId,
        `branches of FORK "${problem.forkId}" starting at "${problem.entries[0]}" and "${problem.entries[1]}" merge at "${problem.nodeId}" before the JOIN`,
      ];
    case 'join-entered-from-outside':
      return [
        problem.joinId,
        `JOIN "${problem.joinId}" is reached from "${problem.from}", which is not inside a branch of its FORK "${problem.forkId}"`,
      ];
  }
}

function loopMarkers(nodes: readonly WorkflowNode[]): { starts: LoopMarker[]; ends: LoopMarker[] } {
  const starts: LoopMarker[] = [];
  const ends: LoopMarker[] = [];
  for (const node of nodes) {
    if (node.type === 'LOOP_START') starts.push({ id: node.id, loopId: node.config.loopId });
    if (node.type === 'LOOP_END') ends.push({ id: node.id, loopId: node.config.loopId });
  }
  return { starts, ends };
}

function loopProblemNode(problem: LoopProblem): string {
  switch (problem.kind) {
    case 'end-not-in-body':
      return problem.startId;
    case 'escapes':
    case 'enters':
      return problem.fromId;
    default:
      return problem.nodeId;
  }
}

function loopProblemMessage(problem: LoopProblem): string {
  switch (problem.kind) {
    case 'missing-start':
      return `LOOP_END "${problem.nodeId}" has no LOOP_START with loopId "${problem.loopId}"`;
    case 'missing-end':
      return `LOOP_START "${problem.nodeId}" has no LOOP_END with loopId "${problem.loopId}"`;
    case 'duplicate':
      return `loopId "${problem.loopId}" has more than one ${problem.markerType} ("${problem.nodeId}" is extra)`;
    case 'end-not-in-body':
      return `LOOP_END "${problem.endId}" cannot be reached from LOOP_START "${problem.startId}" (loop "${problem.loopId}")`;
    case 'escapes':
      return `"${problem.fromId}" goes to "${problem.toId}", out of loop "${problem.loopId}" other than through its LOOP_END "${problem.endId}"; leave a loop through its LOOP_END (a breakCondition ends it early)`;
    case 'enters':
      return `"${problem.fromId}" goes to "${problem.toId}", into loop "${problem.loopId}" other than through its LOOP_START "${problem.startId}"`;
    case 'crossed':
      return `loop "${problem.loopId}" starts inside loop "${problem.outerLoopId}" and ends outside it ("${problem.nodeId}"): loops must nest, an inner one ending before its outer one`;
  }
}

/**
 * A VARIABLE node writing the loop scope outside every loop body has no loop frame to write to, so it
 * would fail at run time. Top level only: a subgraph's nodes may run inside a loop of its caller.
 */
function checkLoopScopeWrites(
  nodes: readonly WorkflowNode[],
  loops: ReadonlyMap<string, { body: ReadonlySet<string> }>,
  at: (code: 'INVALID_VARIABLE', message: string, nodeId: string) => void,
): void {
  const inSomeLoop = (id: string) => [...loops.values()].some((loop) => loop.body.has(id));
  for (const node of nodes) {
    if (node.type === 'VARIABLE' && node.config.scope === 'loop' && !inSomeLoop(node.id)) {
      at(
        'INVALID_VARIABLE',
        `node "${node.id}" writes "${node.config.variableName}" in the loop scope but is in no loop's body`,
        node.id,
      );
    }
  }
}
