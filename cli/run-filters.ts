/**
 * `stepthread runs`' filters, checked before any store is opened: `--status` names a status `runs`
 * shows there (locally, or on a deployed stack, where a Step Functions status goes too) and `--limit`
 * a positive count; anything else is INVALID_RUNS_FILTER.
 */
import { StepthreadError } from '../engine/errors.ts';
import type { ExecutionStatus } from '../functions/stores/execution-index.ts';
import { SFN_EXECUTION_STATUSES } from './deployed/sfn-statuses.ts';

/**
 * A run's status as `runs` shows it: the execution's stepthread status; INTERRUPTED, a local run
 * whose process is gone; TIMED_OUT and ABORTED, a deployed execution Step Functions ended that way.
 */
export type RunStatus = ExecutionStatus | 'INTERRUPTED' | 'TIMED_OUT' | 'ABORTED';

/** What `--status` accepts locally: exactly the statuses a local listing shows. */
export const LOCAL_STATUS_FILTERS = [
  'RUNNING',
  'COMPLETED',
  'FAILED',
  'CANCELLED',
  'CONTINUED',
  'INTERRUPTED',
] as const;

/**
 * What `--status` accepts on a deployed stack: the statuses it shows (cli/deployed/runs.ts
 * combinedStatus; no local process there, so no INTERRUPTED), and Step Functions' own.
 */
export const DEPLOYED_STATUS_FILTERS: readonly string[] = [
  ...new Set<string>([
    'RUNNING',
    'COMPLETED',
    'FAILED',
    'CANCELLED',
    'CONTINUED',
    'TIMED_OUT',
    'ABORTED',
    ...SFN_EXECUTION_STATUSES,
  ]),
];

/** `--status`'s help: both lists, as parseStatusFilter checks them. */
export const STATUS_FILTER_HELP = `only runs with this status (${LOCAL_STATUS_FILTERS.join(', ')}; on a deployed stack ${DEPLOYED_STATUS_FILTERS.join(', ')})`;

/** `--status`, upper-cased, checked against what the listing (local or deployed) can show. */
export function parseStatusFilter(
  status: string | undefined,
  where: 'local' | 'deployed',
): string | undefined {
  if (status === undefined) return undefined;
  const wanted = status.toUpperCase();
  const known: readonly string[] = where === 'local' ? LOCAL_STATUS_FILTERS : DEPLOYED_STATUS_FILTERS;
  if (!known.includes(wanted)) {
    // A deployed stack's status given locally would silently list nothing: say where it applies.
    const elsewhere =
      where === 'local' && DEPLOYED_STATUS_FILTERS.includes(wanted)
        ? ` (${wanted} is shown only for a deployed stack: --stack)`
        : '';
    throw new StepthreadError(
      'INVALID_RUNS_FILTER',
      `--status ${status} is not a status runs shows ${where === 'local' ? 'locally' : 'on a deployed stack'}${elsewhere}: use one of ${known.join(', ')}`,
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
