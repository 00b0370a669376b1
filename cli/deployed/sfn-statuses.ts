/** Step Functions' execution statuses (no SDK import: `runs` checks `--status` before loading it). */
export const SFN_EXECUTION_STATUSES = [
  'RUNNING',
  'SUCCEEDED',
  'FAILED',
  'TIMED_OUT',
  'ABORTED',
  'PENDING_REDRIVE',
] as const;
export type SfnExecutionStatus = (typeof SFN_EXECUTION_STATUSES)[number];

export function isSfnExecutionStatus(status: string | undefined): status is SfnExecutionStatus {
  return SFN_EXECUTION_STATUSES.some((known) => known === status);
}
