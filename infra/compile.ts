/**
 * The ASL compiler as the deploy path uses it: one call, so constructs and tests agree on what a
 * workflow compiles to (placeholders left in for `definitionSubstitutions`).
 */
import { type CompiledWorkflow, compileWorkflow } from '../engine/asl/index.ts';
import type { Workflow } from '../engine/model/schema.ts';

export type { CompiledWorkflow };

export function compileForDeploy(workflow: Workflow): CompiledWorkflow {
  return compileWorkflow(workflow, { resources: 'placeholders' });
}
