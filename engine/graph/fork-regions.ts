/**
 * Pairs each FORK with the JOIN its branches meet at, and checks that the branches stay inside the
 * fork/join region: the ASL compiler turns each pair into one Parallel state, which cannot express a
 * branch that jumps elsewhere or two branches that merge early.
 */
import { reachable } from './algorithms.ts';
import { type Flow, predecessorsOf, successorsOf } from './flow.ts';

export interface BranchRegion {
  /** The branch's first node (a FORK childNodeId); equal to the JOIN for an empty branch. */
  entry: string;
  /** Nodes of the branch, nested regions included; the JOIN is not part of it. */
  nodes: ReadonlySet<string>;
}

export interface ForkRegion {
  forkId: string;
  joinId: string;
  /** One per branch, in path order. */
  branches: readonly BranchRegion[];
}

export type ForkProblem =
  | { kind: 'misses-join'; forkId: string; joinId: string; entry: string }
  | { kind: 'reaches-end'; forkId: string; entry: string; nodeId: string }
  | { kind: 'returns-to-fork'; forkId: string; entry: string; nodeId: string }
  | { kind: 'entered-from-outside'; forkId: string; entry: string; nodeId: string; from: string }
  | { kind: 'branches-merge'; forkId: string; entries: readonly [string, string]; nodeId: string }
  | { kind: 'join-entered-from-outside'; forkId: string; joinId: string; from: string };

export interface ForkAnalysis {
  regions: ReadonlyMap<string, ForkRegion>;
  /** FORKs whose branches reach no JOIN. */
  unpairedForks: readonly string[];
  /** Every JOIN → the FORKs paired with it (valid when exactly one). */
  joinForks: ReadonlyMap<string, readonly string[]>;
  problems: readonly ForkProblem[];
}

export function analyzeForks(flow: Flow): ForkAnalysis {
  const pairs = new Map<string, string | undefined>();
  const inProgress = new Set<string>();

  // The JOIN a fork pairs with: the one reached by most branches (ties: the earliest branch's).
  const pairOf = (forkId: string): string | undefined => {
    if (pairs.has(forkId)) return pairs.get(forkId);
    if (inProgress.has(forkId)) return undefined; // a fork inside its own branch: reported as an escape
    inProgress.add(forkId);
    const counts = new Map<string, number>();
    for (const entry of flow.forkEntries.get(forkId) ?? []) {
      for (const joinId of joinsReached(entry, forkId)) counts.set(joinId, (counts.get(joinId) ?? 0) + 1);
    }
    let best: string | undefined;
    for (const [joinId, count] of counts) if (best === undefined || count > counts.get(best)!) best = joinId;
    inProgress.delete(forkId);
    pairs.set(forkId, best);
    return best;
  };

  // First JOINs on each path from `entry`, stepping over nested fork/join regions.
  const joinsReached = (entry: string, forkId: string): string[] => {
    const found: string[] = [];
    const seen = new Set<string>();
    const stack = [entry];
    while (stack.length > 0) {
      const id = stack.pop()!;
      if (seen.has(id) || id === forkId) continue;
      seen.add(id);
      const type = flow.types.get(id);
      if (type === 'JOIN') {
        found.push(id);
        continue;
      }
      const nestedJoin = type === 'FORK' ? pairOf(id) : undefined;
      const next = nestedJoin !== undefined ? successorsOf(flow, nestedJoin) : successorsOf(flow, id);
      for (let i = next.length - 1; i >= 0; i--) stack.push(next[i]!);
    }
    return found;
  };

  const regions = new Map<string, ForkRegion>();
  const unpairedForks: string[] = [];
  const joinForks = new Map<string, string[]>();
  const problems: ForkProblem[] = [];
  for (const id of flow.order) if (flow.types.get(id) === 'JOIN') joinForks.set(id, []);

  for (const forkId of flow.order) {
    if (flow.types.get(forkId) !== 'FORK') continue;
    const joinId = pairOf(forkId);
    if (joinId === undefined) {
      unpairedForks.push(forkId);
      continue;
    }
    joinForks.get(joinId)?.push(forkId);
    const region = regionOf(flow, forkId, joinId);
    regions.set(forkId, region);
    problems.push(...regionProblems(flow, region));
  }
  return { regions, unpairedForks, joinForks, problems };
}

function regionOf(flow: Flow, forkId: string, joinId: string): ForkRegion {
  const stop = new Set([joinId]);
  const branches = (flow.forkEntries.get(forkId) ?? []).map((entry) => ({
    entry,
    nodes: reachable([entry], (id) => successorsOf(flow, id), stop),
  }));
  return { forkId, joinId, branches };
}

function regionProblems(flow: Flow, { forkId, joinId, branches }: ForkRegion): ForkProblem[] {
  const problems: ForkProblem[] = [];
  const inAnyBranch = (id: string): boolean => branches.some((branch) => branch.nodes.has(id));
  for (const { entry, nodes } of branches) {
    const problem = branchProblem(flow, forkId, joinId, entry, nodes, inAnyBranch);
    if (problem) problems.push(problem);
  }
  for (let i = 0; i < branches.length; i++) {
    for (let j = i + 1; j < branches.length; j++) {
      const a = branches[i]!;
      const b = branches[j]!;
      const shared = [...a.nodes].find((id) => b.nodes.has(id));
      if (shared !== undefined) {
        problems.push({ kind: 'branches-merge', forkId, entries: [a.entry, b.entry], nodeId: shared });
      }
    }
  }
  for (const from of predecessorsOf(flow, joinId)) {
    if (from !== forkId && !inAnyBranch(from))
      problems.push({ kind: 'join-entered-from-outside', forkId, joinId, from });
  }
  return problems;
}

/** At most one problem per branch: the first of these that applies. */
function branchProblem(
  flow: Flow,
  forkId: string,
  joinId: string,
  entry: string,
  nodes: ReadonlySet<string>,
  inAnyBranch: (id: string) => boolean,
): ForkProblem | undefined {
  if (entry === joinId) return undefined;
  const ordered = flow.order.filter((id) => nodes.has(id));
  if (!ordered.some((id) => successorsOf(flow, id).includes(joinId))) {
    return { kind: 'misses-join', forkId, joinId, entry };
  }
  const end = ordered.find((id) => flow.types.get(id) === 'END');
  if (end !== undefined) return { kind: 'reaches-end', forkId, entry, nodeId: end };
  if (nodes.has(forkId)) return { kind: 'returns-to-fork', forkId, entry, nodeId: forkId };
  for (const id of ordered) {
    for (const from of predecessorsOf(flow, id)) {
      const allowed = nodes.has(from) || (id === entry && from === forkId) || inAnyBranch(from);
      if (!allowed) return { kind: 'entered-from-outside', forkId, entry, nodeId: id, from };
    }
  }
  return undefined;
}
