/**
 * Arithmetic on visible runs: the visible messages as half-open `[start, end)` runs of log positions.
 *
 * Every function here returns *normalised* runs: no empty run, and no run that continues the
 * previous one (`prev.end === next.start` are merged), so a contiguous conversation is one run
 * and its index state stays O(1) in size however long the log grows.
 */
import type { Run } from './types.ts';

/** Number of visible messages the runs describe. */
export function runsLength(runs: readonly Run[]): number {
  let count = 0;
  for (const [start, end] of runs) count += end - start;
  return count;
}

/** Appends one run to a mutable list, merging it into the last run when it continues it. */
function pushRun(into: Run[], start: number, end: number): void {
  if (end <= start) return;
  const last = into[into.length - 1];
  if (last !== undefined && last[1] === start) into[into.length - 1] = [last[0], end];
  else into.push([start, end]);
}

/** Concatenates run lists in display order, merging at the seams. */
export function concatRuns(...parts: readonly (readonly Run[])[]): Run[] {
  const out: Run[] = [];
  for (const part of parts) for (const [start, end] of part) pushRun(out, start, end);
  return out;
}

/** Normalises arbitrary runs (drops empty ones, merges continuations). */
export function normaliseRuns(runs: readonly Run[]): Run[] {
  return concatRuns(runs);
}

/** The runs covering visible positions `[from, to)`, clamped to the visible count (like Array#slice). */
export function sliceRuns(runs: readonly Run[], from: number, to: number): Run[] {
  const out: Run[] = [];
  let offset = 0;
  for (const [start, end] of runs) {
    const length = end - start;
    const lo = Math.max(from - offset, 0);
    const hi = Math.min(to - offset, length);
    if (lo < hi) pushRun(out, start + lo, start + hi);
    offset += length;
    if (offset >= to) break;
  }
  return out;
}

/** Log position of the message shown at visible position `index`, if any. */
export function positionAt(runs: readonly Run[], index: number): number | undefined {
  if (!Number.isInteger(index) || index < 0) return undefined;
  let offset = 0;
  for (const [start, end] of runs) {
    const length = end - start;
    if (index < offset + length) return start + (index - offset);
    offset += length;
  }
  return undefined;
}

/** Visible position at which log position `position` is shown, if it is visible. */
export function indexOfPosition(runs: readonly Run[], position: number): number | undefined {
  let offset = 0;
  for (const [start, end] of runs) {
    if (position >= start && position < end) return offset + (position - start);
    offset += end - start;
  }
  return undefined;
}

/** Log positions of the visible messages, in display order. */
export function positionsOf(runs: readonly Run[]): number[] {
  const out: number[] = [];
  for (const [start, end] of runs) for (let p = start; p < end; p++) out.push(p);
  return out;
}

/** Normalised runs for a list of log positions in display order. */
export function runsFromPositions(positions: readonly number[]): Run[] {
  const out: Run[] = [];
  for (const p of positions) pushRun(out, p, p + 1);
  return out;
}

/**
 * Why `runs` is not a valid visible list over a log of `logLength` messages, or undefined when it is:
 * every run non-empty, of integer positions inside the log, and no position shown twice.
 */
export function runsProblem(runs: readonly Run[], logLength: number): string | undefined {
  for (const [start, end] of runs) {
    if (!Number.isInteger(start) || !Number.isInteger(end) || start < 0 || start >= end) {
      return `run [${start}, ${end}) is not a non-empty range of positions`;
    }
    if (end > logLength) return `run [${start}, ${end}) reaches past the log length ${logLength}`;
  }
  // Runs are in display order, not log order: sort a copy to find overlaps.
  const sorted = [...runs].sort((a, b) => a[0] - b[0]);
  for (let i = 1; i < sorted.length; i++) {
    const prev = sorted[i - 1]!;
    const next = sorted[i]!;
    if (next[0] < prev[1]) return `runs [${prev[0]}, ${prev[1]}) and [${next[0]}, ${next[1]}) overlap`;
  }
  return undefined;
}

/** Whether no run is empty and no run continues the one before it. */
export function isNormalised(runs: readonly Run[]): boolean {
  for (let i = 0; i < runs.length; i++) {
    const run = runs[i]!;
    if (run[0] >= run[1]) return false;
    if (i > 0 && runs[i - 1]![1] === run[0]) return false;
  }
  return true;
}
