/**
 * Deterministic ids, so a retried step recreates the same threads and bookkeeping items. Hashed
 * to keep keys short however deeply forks nest.
 */
import { sha256Hex } from '../stores/canonical-json.ts';

/** The root thread of an execution. */
export function rootThreadIdFor(executionId: string): string {
  return `t-${sha256Hex(`root\n${executionId}`).slice(0, 32)}`;
}

/** Child thread ids of a fork, parallel to `forkPathIds`. */
export function childThreadIdsFor(
  parentThreadId: string,
  forkNodeId: string,
  parentStep: number,
  forkPathIds: readonly string[],
): string[] {
  return forkPathIds.map(
    (pathId) =>
      `t-${sha256Hex(`fork\n${parentThreadId}\n${forkNodeId}\n${parentStep}\n${pathId}`).slice(0, 32)}`,
  );
}

/**
 * The join bookkeeping item of one fork instance: the parent thread, the FORK, and the parent's
 * step count after the FORK ran (a FORK inside a loop forks again with a new key).
 */
export function joinKeyFor(parentThreadId: string, forkNodeId: string, stepAfterFork: number): string {
  return `${parentThreadId}/${forkNodeId}/${stepAfterFork}`;
}

/** The parent's step count after the FORK, from a join key (node ids may hold `/`: it is the last part). */
export function forkStepOfJoinKey(joinKey: string): number | undefined {
  const step = Number(joinKey.slice(joinKey.lastIndexOf('/') + 1));
  return Number.isInteger(step) ? step : undefined;
}
