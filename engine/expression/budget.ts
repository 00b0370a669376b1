/**
 * The work budget of one evaluation, or of one template render with all its `{{ }}` (limits.ts
 * MAX_EVALUATION_WORK): one unit per syntax node evaluated, plus the characters and elements each
 * built-in, concatenation, array literal and interpolation reads or builds. Past it, the evaluation
 * ends with EXPRESSION_BUDGET_EXCEEDED, so no valid expression or template can hold a Lambda for long.
 * Evaluation is synchronous, so the active budget is simply module state.
 */
import { StepthreadError } from '../errors.ts';
import { MAX_EVALUATION_WORK } from './limits.ts';

let active: { used: number } | undefined;

/** Runs `fn` within the active budget, or a fresh one when none is active. */
export function withBudget<T>(fn: () => T): T {
  if (active !== undefined) return fn();
  active = { used: 0 };
  try {
    return fn();
  } finally {
    active = undefined;
  }
}

/** Spends `units` of the active budget (none outside an evaluation). */
export function charge(units: number): void {
  if (active === undefined) return;
  active.used += units;
  if (active.used > MAX_EVALUATION_WORK) {
    throw new StepthreadError(
      'EXPRESSION_BUDGET_EXCEEDED',
      `the expression or template did more than ${MAX_EVALUATION_WORK.toLocaleString('en-US')} units of work (syntax nodes evaluated plus characters and elements read and built); simplify it or do the work in a CODE node`,
    );
  }
}

/** An element or key costs more than a character to copy and compare (measured: bench/expressions.ts). */
const ELEMENT_UNITS = 8;

/** Units for reading or building `value`: its characters, or its elements or keys (shallow). */
export function sizeOf(value: unknown): number {
  if (typeof value === 'string') return value.length;
  if (Array.isArray(value)) return value.length * ELEMENT_UNITS;
  if (typeof value === 'object' && value !== null) return Object.keys(value).length * ELEMENT_UNITS;
  return 1;
}
