/**
 * What `stepthread diff --json` prints (cli/commands/diff.ts builds it), in a module of types only,
 * so the console's Compare view shares them without the stores.
 */
import type { Parting } from '../engine/thread/step-alignment.ts';
import type { RunCost } from './run-cost.ts';

/** One side: what it is, how it ended, and what it spent. */
export interface DiffSide {
  threadId: string;
  executionId?: string;
  workflowId: string;
  status: string;
  /** Steps in its history (a copy's counts its source's up to the copy). */
  steps: number;
  /** A copy: its source and the source's steps it holds. */
  copiedFrom?: string;
  copiedAtStep?: number;
  startTime: string;
  endTime?: string;
  durationMs?: number;
  /** Tokens and cost: its run's (the spend of the run it is the root of), else the sum of its steps'. */
  cost: Pick<RunCost, 'modelCalls' | 'inputTokens' | 'outputTokens' | 'tokens' | 'costUsd' | 'unpricedCalls'>;
}

/** A step of one side as a difference shows it. */
export interface DiffStep {
  step: number;
  position: number;
  nodeId: string;
  nodeType: string;
  status: string;
  /** Absent when the node gave none; one over 1 MB stays its reference. */
  output?: unknown;
}

export interface DiffReport {
  a: DiffSide;
  b: DiffSide;
  /** Positions both histories share as the same records (a copy against its source: the copy point). */
  sharedSteps: number;
  /** The last position before they part (or the last compared, when they do not), and its node. */
  sameUpTo: { position: number; nodeId: string } | null;
  /** Where they part; null when every aligned step is the same. */
  partsAt: {
    reason: Parting['reason'];
    position: number;
    a: (DiffStep & { occurrence: number }) | null;
    b: (DiffStep & { occurrence: number }) | null;
  } | null;
  /** Aligned steps (node, occurrence) whose output or status differ, or that one side lacks (null). */
  outputs: { nodeId: string; occurrence: number; a: DiffStep | null; b: DiffStep | null }[];
  /** How many more differing steps there are than `outputs` lists. */
  outputsNotShown?: number;
  /** Variables whose final values differ: `scope` and `name` (a loop or subgraph scope as a whole). */
  variables: { scope: string; name: string; a?: unknown; b?: unknown }[];
  final: { same: boolean; a?: unknown; b?: unknown };
  /**
   * The fork children (fork paths, list items) of each side, paired by forkPathId (`path`, or
   * `path[i]` for a list's item i) and occurrence, each with its own diff; null on a side without it.
   */
  forks: ForkDiff[];
}

export interface ForkDiff {
  forkPathId: string;
  occurrence: number;
  a: string | null;
  b: string | null;
  /** Both sides' children alike: no step, variable or output differs (nor any of their own children). */
  same: boolean;
  diff?: Omit<DiffReport, 'a' | 'b'>;
}

/** What the Compare view shows of a step besides its digest. */
export interface KeptStep {
  output?: unknown;
  error?: { code: string; message: string };
  durationMs: number;
}
