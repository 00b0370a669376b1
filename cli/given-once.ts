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
