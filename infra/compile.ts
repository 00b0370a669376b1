/**
 * The ASL compiler as the deploy path uses it: one call, so constructs and tests agree on what a
 * workflow compiles to (function placeholders left in, bound at deploy by `definitionParts`).
 */
import { createHash } from 'node:crypto';
import { type CompiledWorkflow, compileWorkflow, substituteResources } from '../engine/asl/index.ts';
import type { Workflow } from '../engine/model/schema.ts';

export type { CompiledWorkflow };

/**
 * `continueAfterEvents`: continue-as-new's threshold (default 20,000 history events; false: off);
 * `traceContext`: fork branches and Map items carry the trace context (the runtime exports traces).
 */
export function compileForDeploy(
  workflow: Workflow,
  options: { continueAfterEvents?: number | false; traceContext?: boolean } = {},
): CompiledWorkflow {
  return compileWorkflow(workflow, options);
}

/** A piece of the deployed definition: literal text, or the ARN of the function a placeholder names. */
export type DefinitionPart = string | { readonly functionKey: string };

/**
 * The definition as the parts of an `Fn::Join` for the template: the JSON text split at each Task's
 * `${Fn_<TYPE>}` placeholder, which becomes its function's ARN. The text between them is deployed
 * byte for byte: no Fn::Sub (CloudFormation ends a variable at the first `}`, so no escaping survives a
 * nested template literal such as `a${x ? `b${x}` : 'c'}d`) and no DefinitionSubstitutions (which would
 * take any `${name}` of the workflow's own text).
 */
export function definitionParts(compiled: CompiledWorkflow): DefinitionPart[] {
  const plain = JSON.stringify(compiled.definition);
  // A marker no workflow text can contain: it depends on the whole text.
  const mark = `STEPTHREAD${createHash('sha256').update(plain).digest('hex').slice(0, 16)}`;
  const marked = JSON.stringify(
    substituteResources(
      compiled.definition,
      Object.fromEntries(compiled.substitutionKeys.map((key) => [key, `${mark}:${key}`])),
    ),
  );
  const pieces = marked.split(new RegExp(`${mark}:(Fn_[A-Z_]+)`));
  // split with a capture group alternates text and captured keys: text, key, text, ..., text.
  return pieces
    .map((piece, i): DefinitionPart => (i % 2 === 1 ? { functionKey: piece } : piece))
    .filter((part) => part !== '');
}
