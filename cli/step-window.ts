/**
 * Which of a thread's node runs `inspect` prints. A run of thousands of steps printed whole buries
 * what a person looks for (how it started, where it is): by default a long list shows its first and
 * last runs and says how many lie between; `--steps all`, `--steps <N>` (the last N) or
 * `--steps <A>-<B>` (steps A to B) choose otherwise. INVALID_STEPS_WINDOW for anything else.
 */
import { StepthreadError } from '../engine/errors.ts';

export type StepWindow =
  | { readonly kind: 'default' }
  | { readonly kind: 'all' }
  | { readonly kind: 'last'; readonly count: number }
  | { readonly kind: 'range'; readonly from: number; readonly to: number };

/** Runs a default window keeps at the start and at the end of a list longer than their sum. */
export const DEFAULT_HEAD = 10;
export const DEFAULT_TAIL = 40;

export function parseStepWindow(value: string | undefined): StepWindow {
  if (value === undefined) return { kind: 'default' };
  const text = value.trim();
  if (text === 'all') return { kind: 'all' };
  if (/^\d+$/.test(text) && Number(text) > 0) return { kind: 'last', count: Number(text) };
  const range = /^(\d+)-(\d+)$/.exec(text);
  if (range && Number(range[1]) >= 1 && Number(range[1]) <= Number(range[2])) {
    return { kind: 'range', from: Number(range[1]), to: Number(range[2]) };
  }
  throw new StepthreadError(
    'INVALID_STEPS_WINDOW',
    `--steps takes all, a count N (the last N node runs) or A-B (steps A to B), got ${JSON.stringify(value)}`,
  );
}

/** A window over a list: the runs shown, in order, and in their places the runs left out. */
export type WindowEntry<T> =
  | { readonly run: T }
  | { readonly omitted: number; readonly fromStep?: number; readonly toStep?: number };

/**
 * The runs `window` keeps of `runs` (in order; `stepOf` gives a run's step, undefined for one not
 * recorded yet, which a range keeps only when it reaches the thread's last recorded step).
 */
export function applyStepWindow<T>(
  runs: readonly T[],
  window: StepWindow,
  stepOf: (run: T) => number | undefined,
): WindowEntry<T>[] {
  const kept = keptBy(runs, window, stepOf);
  const entries: WindowEntry<T>[] = [];
  let left: T[] = [];
  const closeGap = () => {
    if (left.length === 0) return;
    const steps = left.map(stepOf).filter((step): step is number => step !== undefined);
    entries.push({
      omitted: left.length,
      ...(steps.length > 0 ? { fromStep: Math.min(...steps), toStep: Math.max(...steps) } : {}),
    });
    left = [];
  };
  runs.forEach((run, i) => {
    if (kept(i)) {
      closeGap();
      entries.push({ run });
    } else left.push(run);
  });
  closeGap();
  return entries;
}

function keptBy<T>(
  runs: readonly T[],
  window: StepWindow,
  stepOf: (run: T) => number | undefined,
): (i: number) => boolean {
  switch (window.kind) {
    case 'all':
      return () => true;
    case 'default':
      return runs.length <= DEFAULT_HEAD + DEFAULT_TAIL
        ? () => true
        : (i) => i < DEFAULT_HEAD || i >= runs.length - DEFAULT_TAIL;
    case 'last':
      return (i) => i >= runs.length - window.count;
    case 'range': {
      const recorded = runs.map(stepOf).filter((step): step is number => step !== undefined);
      const lastStep = recorded.length === 0 ? 0 : Math.max(...recorded);
      return (i) => {
        const step = stepOf(runs[i]!);
        if (step === undefined) return window.to >= lastStep;
        return step >= window.from && step <= window.to;
      };
    }
  }
}
