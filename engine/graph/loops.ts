/** LOOP_START/LOOP_END pairing by loopId and the loop bodies between them. */
import { reachable } from './algorithms.ts';
import { type Flow, predecessorsOf, successorsOf } from './flow.ts';

export interface LoopMarker {
  id: string;
  loopId: string;
}

export interface LoopRegion {
  loopId: string;
  startId: string;
  endId: string;
  /** Nodes strictly between LOOP_START and LOOP_END. */
  body: ReadonlySet<string>;
}

export type LoopProblem =
  | { kind: 'missing-start' | 'missing-end'; loopId: string; nodeId: string }
  | { kind: 'duplicate'; loopId: string; nodeId: string; markerType: 'LOOP_START' | 'LOOP_END' }
  | { kind: 'end-not-in-body'; loopId: string; startId: string; endId: string }
  /** An edge leaves the body other than through the loop's LOOP_END (a ROUTE "breaking out"). */
  | { kind: 'escapes'; loopId: string; fromId: string; toId: string; endId: string }
  /** An edge enters the body other than through the loop's LOOP_START. */
  | { kind: 'enters'; loopId: string; fromId: string; toId: string; startId: string }
  /** The loop starts inside `outerLoopId`'s body and ends outside it (or the other way round). */
  | { kind: 'crossed'; loopId: string; outerLoopId: string; nodeId: string };

export interface LoopStructureOptions {
  /**
   * Nodes a body may also leave to: the top level's END, where the run ends and no frame matters (a
   * ROUTE "break to END"). A subgraph's END returns to its caller, so it is no such exit.
   */
  readonly exitAllowed?: (nodeId: string) => boolean;
}

export interface LoopAnalysis {
  loops: ReadonlyMap<string, LoopRegion>;
  problems: readonly LoopProblem[];
}

/** Pairs markers by loopId; with a flow, also checks that LOOP_END follows LOOP_START and computes bodies. */
export function analyzeLoops(
  starts: readonly LoopMarker[],
  ends: readonly LoopMarker[],
  flow: Flow | undefined,
  options: LoopStructureOptions = {},
): LoopAnalysis {
  const problems: LoopProblem[] = [];
  const loops = new Map<string, LoopRegion>();
  const loopIds = [...new Set([...starts, ...ends].map((marker) => marker.loopId))];
  for (const loopId of loopIds) {
    const s = starts.filter((marker) => marker.loopId === loopId);
    const e = ends.filter((marker) => marker.loopId === loopId);
    if (s.length > 1)
      problems.push({ kind: 'duplicate', loopId, nodeId: s[1]!.id, markerType: 'LOOP_START' });
    if (e.length > 1) problems.push({ kind: 'duplicate', loopId, nodeId: e[1]!.id, markerType: 'LOOP_END' });
    if (s.length === 0) problems.push({ kind: 'missing-start', loopId, nodeId: e[0]!.id });
    if (e.length === 0) problems.push({ kind: 'missing-end', loopId, nodeId: s[0]!.id });
    const start = s[0];
    const end = e[0];
    if (s.length !== 1 || e.length !== 1 || !start || !end || !flow) continue;
    const forward = reachable(
      [...successorsOf(flow, start.id)],
      (id) => successorsOf(flow, id),
      new Set([start.id, end.id]),
    );
    const reachesEnd = [start.id, ...forward].some((id) => successorsOf(flow, id).includes(end.id));
    if (!reachesEnd) {
      problems.push({ kind: 'end-not-in-body', loopId, startId: start.id, endId: end.id });
      continue;
    }
    const backward = reachable(
      [...predecessorsOf(flow, end.id)],
      (id) => predecessorsOf(flow, id),
      new Set([start.id, end.id]),
    );
    const body = new Set([...forward].filter((id) => backward.has(id)));
    loops.set(loopId, { loopId, startId: start.id, endId: end.id, body });
  }
  if (flow) problems.push(...structureProblems(loops, flow, options.exitAllowed ?? (() => false)));
  return { loops, problems };
}

/**
 * A loop's frame is pushed by its LOOP_START and popped by its LOOP_END, so every way into the body
 * passes the one and every way out the other, and loops nest: otherwise a run reaches an outer
 * LOOP_END with an inner frame on top (INVALID_LOOP at run time) or leaves a frame behind. Each
 * loop's back edge (LOOP_END → LOOP_START) is the loop itself, not a way in or out of another one's
 * body: a crossing is reported as such.
 */
function structureProblems(
  loops: ReadonlyMap<string, LoopRegion>,
  flow: Flow,
  exitAllowed: (nodeId: string) => boolean,
): LoopProblem[] {
  const problems: LoopProblem[] = [];
  const isBackEdge = (from: string, to: string) => flow.backEdges.get(from) === to;
  const crossed = new Set<string>();
  for (const outer of loops.values()) {
    for (const inner of loops.values()) {
      if (inner === outer || outer.body.has(inner.startId) === outer.body.has(inner.endId)) continue;
      crossed.add(inner.loopId).add(outer.loopId);
      if (outer.body.has(inner.startId))
        problems.push({
          kind: 'crossed',
          loopId: inner.loopId,
          outerLoopId: outer.loopId,
          nodeId: inner.endId,
        });
    }
  }
  for (const loop of loops.values()) {
    if (crossed.has(loop.loopId)) continue;
    const inside = (id: string) => loop.body.has(id);
    for (const from of [loop.startId, ...loop.body]) {
      for (const to of successorsOf(flow, from)) {
        if (inside(to) || to === loop.endId || isBackEdge(from, to) || exitAllowed(to)) continue;
        problems.push({ kind: 'escapes', loopId: loop.loopId, fromId: from, toId: to, endId: loop.endId });
      }
    }
    for (const to of loop.body) {
      for (const from of predecessorsOf(flow, to)) {
        if (inside(from) || from === loop.startId || isBackEdge(from, to)) continue;
        problems.push({ kind: 'enters', loopId: loop.loopId, fromId: from, toId: to, startId: loop.startId });
      }
    }
  }
  return problems;
}
