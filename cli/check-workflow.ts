/**
 * Validation as the CLI and the console apply it: the engine's rules, then what only the host can
 * check, reported together with the rest (a file with an unknown key and code that does not compile
 * gets both at once): whether each CODE source compiles in the sandbox, and whether each tool's
 * `parameters` compiles as a JSON Schema (a run would fail every call of it with
 * INVALID_TOOL_DEFINITION). The sandbox and ajv load only for a workflow that needs them.
 */
import type { CodedError } from '../engine/errors.ts';
import type { Workflow } from '../engine/model/schema.ts';
import { type ValidationResult, validateWorkflow } from '../engine/validation/validate.ts';

export async function checkWorkflow(data: unknown): Promise<ValidationResult> {
  const result = validateWorkflow(data);
  const errors: CodedError[] = [];
  if (result.codeSources.length > 0) {
    const { codeSyntaxErrors } = await import('../functions/sandbox/syntax.ts');
    errors.push(...(await codeSyntaxErrors(result.codeSources)));
  }
  if (result.workflow) {
    // A schema the engine already refused for its structure (not an object schema) is reported once.
    const reported = new Set(result.errors.map((error) => error.path));
    const schemaErrors = await toolSchemaErrors(result.workflow);
    errors.push(...schemaErrors.filter((error) => !reported.has(error.path)));
  }
  return errors.length === 0 ? result : { ...result, valid: false, errors: [...result.errors, ...errors] };
}

/** INVALID_TOOL_DEFINITION for each tool, at every level, whose `parameters` ajv cannot compile. */
async function toolSchemaErrors(workflow: Workflow, at = ''): Promise<CodedError[]> {
  const errors: CodedError[] = [];
  const tools = workflow.tools ?? {};
  if (Object.values(tools).some((tool) => tool.parameters !== undefined)) {
    const { checkToolParameters } = await import('../functions/tools/arguments.ts');
    for (const error of await checkToolParameters(tools))
      errors.push({ ...error, ...(error.path ? { path: `${at}${error.path}` } : {}) });
  }
  for (const [index, node] of workflow.nodes.entries()) {
    if (node.type === 'SUBGRAPH')
      errors.push(...(await toolSchemaErrors(node.config.workflow, `${at}nodes[${index}].config.workflow.`)));
  }
  return errors;
}
