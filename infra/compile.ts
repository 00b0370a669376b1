/**
 * The ASL compiler as the deploy path uses it: one call, so constructs and tests agree on what a
 * workflow compiles to (placeholders left in for `definitionSubstitutions`).
 */
import { createHash } from 'node:crypto';
import { type CompiledWorkflow, compileWorkflow, substituteResources } from '../engine/asl/index.ts';
import type { Workflow } from '../engine/model/schema.ts';

export type { CompiledWorkflow };

/** `continueAfterEvents`: continue-as-new's threshold (default 20,000 history events; false: off). */
export function compileForDeploy(
  workflow: Workflow,
  options: { continueAfterEvents?: number | false } = {},
): CompiledWorkflow {
  return compileWorkflow(workflow, { resources: 'placeholders', ...options });
}

/**
 * The definition as an `Fn::Sub` body for the template: each Task's `${Fn_<TYPE>}` stays a variable of
 * the Sub (bound to its function's ARN), and every other `${` — workflow text such as a template literal
 * in CODE or a prompt — is escaped as `${!`, which CloudFormation writes back as a literal `${`. So user
 * text is never substituted (DefinitionSubstitutions would take it), and cfn-lint sees no stray `${…}`.
 */
export function definitionSubBody(compiled: CompiledWorkflow): string {
  const plain = JSON.stringify(compiled.definition);
  // A marker no workflow text can contain: it depends on the whole text.
  const mark = `STEPTHREAD${createHash('sha256').update(plain).digest('hex').slice(0, 16)}`;
  const marked = substituteResources(
    compiled.definition,
    Object.fromEntries(compiled.substitutionKeys.map((key) => [key, `${mark}:${key}`])),
  );
  return JSON.stringify(marked)
    .replaceAll('${', '${!')
    .replace(new RegExp(`${mark}:(Fn_[A-Z_]+)`, 'g'), (_whole, key: string) => `\${${key}}`);
}
