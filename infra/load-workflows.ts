/**
 * Reads every workflow file of a folder for deployment. Any invalid file stops the deploy with its coded
 * errors, before CloudFormation sees anything.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { parseWorkflowText } from '../cli/load-workflow.ts';
import { StepthreadError } from '../engine/errors.ts';
import type { Workflow } from '../engine/model/schema.ts';
import { compiledProblems } from '../engine/validation/deploy-limits.ts';
import { stdioServerProblems } from '../engine/validation/mcp-rules.ts';
import { validateWorkflow } from '../engine/validation/validate.ts';

export interface LoadedWorkflow {
  /** Path of the file it came from (relative to the folder). */
  readonly file: string;
  readonly workflow: Workflow;
}

const WORKFLOW_FILE = /\.(json|ya?ml)$/i;

/** Workflow files under `dir`, recursively, in a stable (sorted) order. */
export function listWorkflowFiles(dir: string): string[] {
  const entries = readdirSync(dir, { withFileTypes: true, recursive: true });
  return entries
    .filter((entry) => entry.isFile() && WORKFLOW_FILE.test(entry.name))
    .map((entry) => join(entry.parentPath, entry.name))
    .sort();
}

export function loadWorkflowsFromDir(dir: string): LoadedWorkflow[] {
  const problems: string[] = [];
  const loaded: LoadedWorkflow[] = [];
  const files = listWorkflowFiles(dir);
  for (const path of files) {
    const file = relative(dir, path);
    const parsed = parseWorkflowText(readFileSync(path, 'utf8'), path);
    if (parsed.kind !== 'loaded') {
      problems.push(
        parsed.kind === 'unparsable'
          ? `${file}: ${parsed.error.code}: ${parsed.error.message}`
          : `${file}: ${parsed.message}`,
      );
      continue;
    }
    const result = validateWorkflow(parsed.data);
    if (!result.valid || !result.workflow) {
      for (const error of result.errors) problems.push(`${file}: ${error.code}: ${error.message}`);
      continue;
    }
    // Valid, but the compiler refuses it, a Lambda has no stdio MCP server to start, or an AWS limit is passed.
    const compiled = compiledProblems(result.workflow);
    const local = [...stdioServerProblems(result.workflow), ...compiled.errors, ...compiled.deploy];
    for (const error of local) problems.push(`${file}: ${error.code} ${error.message}`);
    if (local.length === 0) loaded.push({ file, workflow: result.workflow });
  }
  const seen = new Map<string, string>();
  for (const { file, workflow } of loaded) {
    const other = seen.get(workflow.id);
    if (other) problems.push(`${file}: workflow id "${workflow.id}" is also used by ${other}`);
    seen.set(workflow.id, file);
  }
  if (problems.length > 0) {
    throw new StepthreadError('DEPLOY_CONFIG_INVALID', `cannot deploy ${dir}:\n  ${problems.join('\n  ')}`);
  }
  if (loaded.length === 0) {
    throw new StepthreadError('DEPLOY_CONFIG_INVALID', `no workflow files (.json, .yaml, .yml) under ${dir}`);
  }
  return loaded;
}
