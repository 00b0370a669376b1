/**
 * The ASL compiler as the deploy path uses it: one call, so constructs and tests agree on what a
 * workflow compiles to (placeholders left in for `definitionSubstitutions`).
 */
import { type CompiledWorkflow, compileWorkflow } from '../engine/asl/index.ts';
import type { Workflow } from '../engine/model/schema.ts';

export type { CompiledWorkflow };

/** `continueAfterEvents`: continue-as-new's threshold (default 20,000 history events; false: off). */
export function compileForDeploy(
  workflow: Workflow,
  options: { continueAfterEvents?: number | false } = {},
): CompiledWorkflow {
  return compileWorkflow(workflow, { resources: 'placeholders', ...options });
}
