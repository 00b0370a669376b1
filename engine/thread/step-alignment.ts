/**
 * The alignment `stepthread diff` makes of two threads' steps, pure: the n-th run of node X on one
 * side goes with the n-th run of X on the other. Where the two part is the first position at which
 * the step sequences differ (another node ran, or the same node gave another output or status); the
 * node outputs that differ come from the alignment by occurrence, so a run that took another path
 * for a while and came back still pairs the later runs of each node. In engine/ (no I/O) so the
 * console's Compare view aligns two threads exactly as `diff` does.
 */

/** One step as the diff keeps it: where it is, and a hash of what it gave (values are read back later). */
export interface StepDigest {
  readonly nodeId: string;
  readonly nodeType: string;
  readonly status: string;
  /** Its number on the thread that recorded it (a copy numbers its own steps from 1). */
  readonly step: number;
  /** Its place in the whole history (a copy's history starts with its source's steps). */
  readonly position: number;
  /** The thread whose step record it is (a copy's first steps are its source's). */
  readonly threadId: string;
  /** Hash of its status and output. */
  readonly hash: string;
}

/** A step on both sides (or one), by node and occurrence. */
export interface AlignedStep {
  readonly nodeId: string;
  /** 1 for the node's first run in the steps compared, 2 for its second, … */
  readonly occurrence: number;
  readonly a?: StepDigest;
  readonly b?: StepDigest;
}

/** Where the two step sequences part, and how. */
export interface Parting {
  /**
   * `output`: the same node gave another output (or status); `path`: another node ran;
   * `onlyA` / `onlyB`: one side has steps past the other's last.
   */
  readonly reason: 'output' | 'path' | 'onlyA' | 'onlyB';
  /** The position (in the whole history) at which they part. */
  readonly position: number;
  readonly a?: StepDigest;
  readonly b?: StepDigest;
  /** Occurrence of each side's node there, among the steps compared. */
  readonly occurrenceA?: number;
  readonly occurrenceB?: number;
}

/** The first position at which the two sequences differ; undefined when they do not. */
export function partingOf(a: readonly StepDigest[], b: readonly StepDigest[]): Parting | undefined {
  const countsA = new Map<string, number>();
  const countsB = new Map<string, number>();
  const count = (counts: Map<string, number>, nodeId: string) => {
    const n = (counts.get(nodeId) ?? 0) + 1;
    counts.set(nodeId, n);
    return n;
  };
  for (let i = 0; i < Math.max(a.length, b.length); i++) {
    const left = a[i];
    const right = b[i];
    const occurrenceA = left && count(countsA, left.nodeId);
    const occurrenceB = right && count(countsB, right.nodeId);
    const occurrences = {
      ...(occurrenceA === undefined ? {} : { occurrenceA }),
      ...(occurrenceB === undefined ? {} : { occurrenceB }),
    };
    if (left === undefined) return { reason: 'onlyB', position: right!.position, b: right!, ...occurrences };
    if (right === undefined) return { reason: 'onlyA', position: left.position, a: left, ...occurrences };
    if (left.nodeId !== right.nodeId) {
      return { reason: 'path', position: left.position, a: left, b: right, ...occurrences };
    }
    if (left.hash !== right.hash) {
      return { reason: 'output', position: left.position, a: left, b: right, ...occurrences };
    }
  }
  return undefined;
}

/**
 * The steps paired by node and occurrence, in A's order, then B's steps that A has no match for
 * (in B's order).
 */
export function alignByOccurrence(a: readonly StepDigest[], b: readonly StepDigest[]): AlignedStep[] {
  const byNodeB = new Map<string, StepDigest[]>();
  for (const step of b) {
    const list = byNodeB.get(step.nodeId) ?? [];
    list.push(step);
    byNodeB.set(step.nodeId, list);
  }
  const seen = new Map<string, number>();
  const aligned: AlignedStep[] = [];
  for (const step of a) {
    const occurrence = (seen.get(step.nodeId) ?? 0) + 1;
    seen.set(step.nodeId, occurrence);
    const match = byNodeB.get(step.nodeId)?.[occurrence - 1];
    aligned.push({ nodeId: step.nodeId, occurrence, a: step, ...(match ? { b: match } : {}) });
  }
  for (const [nodeId, list] of byNodeB) {
    const matched = seen.get(nodeId) ?? 0;
    for (const [index, step] of list.entries()) {
      if (index >= matched) aligned.push({ nodeId, occurrence: index + 1, b: step });
    }
  }
  const bOnly = aligned.filter((entry) => entry.a === undefined);
  bOnly.sort((x, y) => x.b!.position - y.b!.position);
  return [...aligned.filter((entry) => entry.a !== undefined), ...bOnly];
}

/** The aligned steps whose outputs (or statuses) differ, or that one side lacks. */
export function differingSteps(aligned: readonly AlignedStep[]): AlignedStep[] {
  return aligned.filter((entry) => entry.a?.hash !== entry.b?.hash);
}

/** History segments as the thread store reads them: a copy's source up to the copy, then its own steps. */
export interface Segment {
  readonly threadId: string;
  readonly steps: number;
}

/**
 * How many leading history positions two threads share: the same thread's steps at the start of
 * both (a copy against its source, or two copies of one thread). Those steps are the same records,
 * so the diff reads and compares what follows.
 */
export function sharedPositions(a: readonly Segment[], b: readonly Segment[]): number {
  let shared = 0;
  for (let i = 0; i < Math.min(a.length, b.length); i++) {
    if (a[i]!.threadId !== b[i]!.threadId) break;
    const steps = Math.min(a[i]!.steps, b[i]!.steps);
    shared += steps;
    if (a[i]!.steps !== b[i]!.steps) break;
  }
  return shared;
}
