/**
 * Which of a thread's steps `inspect` shows (`--steps`): by default the first few and the last
 * ones, as `tail` shows a log's end, so a run of thousands of steps prints (and reads) a page, not
 * all of them; `all`, or a range of step positions.
 */
import { StepthreadError } from '../engine/errors.ts';
import type { HistoryRange } from '../functions/stores/thread-store.ts';

/** Steps shown from the start of a thread by default: how it began. */
export const FIRST_STEPS = 10;
/** Steps shown from the end by default: where it is. A thread of up to FIRST + LAST steps shows whole. */
export const LAST_STEPS = 40;

/** What `--steps` asked for: the default window, every step, or one range of positions. */
export type StepSelection = 'default' | 'all' | HistoryRange;

/** `--steps all`, `--steps 100-200` or `--steps 7`; INVALID_STEPS_RANGE otherwise. */
export function parseSteps(value: string | undefined): StepSelection {
  if (value === undefined) return 'default';
  if (value === 'all') return 'all';
  const match = /^(\d+)(?:-(\d+))?$/.exec(value.trim());
  const from = match ? Number(match[1]) : Number.NaN;
  const to = match?.[2] === undefined ? from : Number(match[2]);
  if (!(Number.isSafeInteger(from) && Number.isSafeInteger(to) && from >= 1 && from <= to)) {
    throw new StepthreadError(
      'INVALID_STEPS_RANGE',
      `--steps takes all, a step (7) or a range of steps (100-200, first ≤ last, from 1), got ${value}`,
    );
  }
  return { from, to };
}

/** The positions to read of a history of `length` steps; undefined: all of them. */
export function rangesOf(selection: StepSelection, length: number): HistoryRange[] | undefined {
  if (selection === 'all') return undefined;
  if (selection !== 'default') return [selection];
  if (length <= FIRST_STEPS + LAST_STEPS) return undefined;
  return [
    { from: 1, to: FIRST_STEPS },
    { from: length - LAST_STEPS + 1, to: length },
  ];
}

/** The positions of 1 … `length` not in `shown` (sorted, 1-based), as ranges. */
export function omittedRanges(shown: readonly number[], length: number): HistoryRange[] {
  const omitted: HistoryRange[] = [];
  let next = 1;
  for (const position of [...shown, length + 1]) {
    if (position > next) omitted.push({ from: next, to: position - 1 });
    next = Math.max(next, position + 1);
  }
  return omitted;
}
