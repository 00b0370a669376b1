/**
 * `stepthread runs`' filters, checked before any store is opened: `--status` names a status `runs`
 * shows (or, on a deployed stack, a Step Functions status) and `--limit` a positive count; anything
 * else is INVALID_RUNS_FILTER.
 */
import { StepthreadError } from '../engine/errors.ts';
import { THREAD_STATUSES } from '../engine/thread/types.ts';
import type { ExecutionStatus } from '../functions/stores/execution-index.ts';
import { SFN_EXECUTION_STATUSES } from './deployed/sfn-statuses.ts';

/**
 * A run's status as `runs` shows it: the execution's stepthread status; INTERRUPTED, a local run
 * whose process is gone; TIMED_OUT and ABORTED, a deployed execution Step Functions ended that way.
 */
export type RunStatus = ExecutionStatus | 'INTERRUPTED' | 'TIMED_OUT' | 'ABORTED';

/** What `--status` accepts. */
export const RUN_STATUS_FILTERS: readonly string[] = [
  ...new Set<string>([
    ...THREAD_STATUSES,
    'CONTINUED',
    'INTERRUPTED',
    'TIMED_OUT',
    'ABORTED',
    ...SFN_EXECUTION_STATUSES,
  ]),
];

/** `--status`, upper-cased. */
export function parseStatusFilter(status: string | undefined): string | undefined {
  if (status === undefined) return undefined;
  const wanted = status.toUpperCase();
  if (!RUN_STATUS_FILTERS.includes(wanted)) {
    throw new StepthreadError(
      'INVALID_RUNS_FILTER',
      `--status ${status} is not a status: use one of ${RUN_STATUS_FILTERS.join(', ')}`,
    );
  }
  return wanted;
}

/** `--limit`: a whole number ≥ 1. */
export function parseLimit(limit: string | undefined): number | undefined {
  if (limit === undefined) return undefined;
  if (!/^\s*\d+\s*$/.test(limit) || Number(limit) < 1) {
    throw new StepthreadError('INVALID_RUNS_FILTER', `--limit must be a positive integer, got ${limit}`);
  }
  return Number(limit);
}
