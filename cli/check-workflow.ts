/**
 * Validation as the CLI and the console apply it: the engine's rules, then whether each CODE source
 * compiles in the sandbox, reported together with the rest (a file with an unknown key and code that
 * does not compile gets both at once); the sandbox loads only for a workflow that has code.
 */
import { type ValidationResult, validateWorkflow } from '../engine/validation/validate.ts';

export async function checkWorkflow(data: unknown): Promise<ValidationResult> {
  const result = validateWorkflow(data);
  if (result.codeSources.length === 0) return result;
  const { codeSyntaxErrors } = await import('../functions/sandbox/syntax.ts');
  const errors = await codeSyntaxErrors(result.codeSources);
  return errors.length === 0 ? result : { ...result, valid: false, errors: [...result.errors, ...errors] };
}
