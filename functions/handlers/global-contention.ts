/**
 * Fork branches that write the same global variable take turns: a write lands only on the root as the
 * branch read it, and a branch whose write lost runs its step again against the new value. Many
 * branches at once (a FORK over 1,000 items counting into one global) would retry in step and lose
 * again, so each waits a random time below a bound that doubles with each loss (full jitter), and
 * keeps trying as long as its patience lasts — not for a number of attempts, which 1,000 siblings
 * exhaust. Past it the Task ends as transient, so the state machine's Retry runs it again later (up to
 * ten times, minutes in all, without holding a Lambda meanwhile); the error it carries is
 * GLOBAL_WRITE_CONTENDED naming the variables, which the branch fails with once those retries are spent.
 */
import { StepthreadError } from '../../engine/errors.ts';
import { TASK_ERROR_NAMES, TaskError } from './task.ts';

/** How long a step keeps trying: well inside the 30 s a VARIABLE or ROUTE Lambda may run. */
export const GLOBAL_WRITE_PATIENCE_MS = 20_000;
/** The first bound of the random wait, and the most it grows to. */
const FIRST_WAIT_MS = 4;
const LONGEST_WAIT_MS = 1_000;

/** The wait before attempt `attempt + 1` (after `attempt` lost): random below a doubling bound. */
export function contentionWaitMs(attempt: number, random: () => number = Math.random): number {
  return random() * Math.min(LONGEST_WAIT_MS, FIRST_WAIT_MS * 2 ** Math.min(attempt, 20));
}

/** A sibling changed the globals between this step's load and its write: the step runs again. */
export class GlobalsChanged extends Error {
  constructor(readonly names: readonly string[]) {
    super(`global variables ${names.join(', ')} changed under this step`);
  }
}

/**
 * The Task's end when the step's writes of `names` lost to other branches for all its patience: a
 * transient error (retried by the state machine) whose message is the coded GLOBAL_WRITE_CONTENDED,
 * as a NodeFailed's is, so a branch that exhausts the retries fails with that code.
 */
export function globalsContended(
  nodeId: string,
  names: readonly string[],
  attempts: number,
  patienceMs: number,
): TaskError {
  const variables = names.map((name) => `"${name}"`).join(', ');
  const error = new StepthreadError(
    'GLOBAL_WRITE_CONTENDED',
    `node ${nodeId}: its write of global ${names.length === 1 ? 'variable' : 'variables'} ${variables} lost to other branches' writes ${attempts} times in ${Math.round(patienceMs / 1000)} s (too many branches write ${names.length === 1 ? 'it' : 'them'} at once); write fewer globals from fork branches, or limit the FORK's maxConcurrency`,
    { nodeId },
  );
  return new TaskError(TASK_ERROR_NAMES.transient, JSON.stringify(error.toJSON()), { cause: error });
}
