/**
 * A flag that takes one value refuses a second one: commander keeps the last silently, so
 * `copy --from a --from b` would copy from b without a word. The refusal is commander's
 * invalid-argument error, printed as `stepthread: USAGE_ERROR: …` (exit 2) like its others.
 */
import { InvalidArgumentError } from 'commander';

/** An option parser for `flag` that takes its value once; `why` says why one is all it takes. */
export function givenOnce(
  flag: string,
  why: string,
): (value: string, previous: string | undefined) => string {
  return (value, previous) => {
    if (previous !== undefined)
      throw new InvalidArgumentError(
        `${flag} is given twice ("${previous}", then "${value}"): ${why}; give it once`,
      );
    return value;
  };
}

/** `--input` of a command that starts a run or a copy: one JSON object. */
export const inputGivenOnce = (what: 'run' | 'copy') =>
  givenOnce('--input', `a ${what} has one input: put every field in one JSON object`);

/** `--answers` of run and resume. */
export const answersGivenOnce = givenOnce(
  '--answers',
  'answers go in one JSON object keyed by node id (a list for a node asked several times)',
);

/** `--budget` of run and start. */
export const budgetGivenOnce = givenOnce(
  '--budget',
  'a run has one budget: put every limit in one JSON object',
);
