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
  | { kind: 'end-not-in-body'; loopId: string; startId: string; endId: string };

export interface LoopAnalysis {
  loops: ReadonlyMap<string, LoopRegion>;
  problems: readonly LoopProblem[];
}

/** Pairs markers by loopId; with a flow, also checks that LOOP_END follows LOOP_START and computes bodies. */
export function analyzeLoops(
  starts: readonly LoopMarker[],
  ends: readonly LoopMarker[],
  flow: Flow | undefined,
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
  return { loops, problems };
}
