/**
 * Reads every workflow file of a folder for deployment. Any invalid file stops the deploy with its coded
 * errors, before CloudFormation sees anything. A valid workflow that needs a stdio MCP server runs only
 * locally (a Lambda has no program to start): the folder's deploy leaves it out and says so, since a
 * folder served by `stepthread dev` may hold such workflows beside deployable ones (examples/ does);
 * `stdioServers: 'refuse'` refuses it instead, as the workflow construct always does.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { parseWorkflowText } from '../cli/load-workflow.ts';
import { StepthreadError } from '../engine/errors.ts';
import type { Workflow } from '../engine/model/schema.ts';
import { compiledProblems } from '../engine/validation/deploy-limits.ts';
import { stdioServerProblems } from '../engine/validation/mcp-rules.ts';
import { validateWorkflow } from '../engine/validation/validate.ts';

/** What the folder's deploy does with a workflow that needs a stdio MCP server. */
export type StdioServersPolicy = 'skip' | 'refuse';

export interface LoadWorkflowsOptions {
  /** `skip` (default): leave such a workflow out, with a warning; `refuse`: stop the deploy. */
  readonly stdioServers?: StdioServersPolicy;
  /** Where the warning of a workflow left out goes (default: stderr, which `cdk synth` shows). */
  readonly warn?: (message: string) => void;
}

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

const warnOnStderr = (message: string) => {
  process.stderr.write(`${message}\n`);
};

export function loadWorkflowsFromDir(dir: string, options: LoadWorkflowsOptions = {}): LoadedWorkflow[] {
  const skipStdio = (options.stdioServers ?? 'skip') === 'skip';
  const warn = options.warn ?? warnOnStderr;
  const problems: string[] = [];
  const loaded: LoadedWorkflow[] = [];
  const skipped: string[] = [];
  const files = listWorkflowFiles(dir);
  for (const path of files) {
    const file = relative(dir, path);
    const parsed = parseWorkflowText(readFileSync(path, 'utf8'), path);
    if (parsed.kind !== 'loaded') {
      problems.push(`${file}: ${parsed.error.code}: ${parsed.error.message}`);
      continue;
    }
    const result = validateWorkflow(parsed.data);
    if (!result.valid || !result.workflow) {
      for (const error of result.errors) problems.push(`${file}: ${error.code}: ${error.message}`);
      continue;
    }
    // Valid, but the compiler refuses it, a Lambda has no stdio MCP server to start, or an AWS limit is passed.
    const compiled = compiledProblems(result.workflow);
    const stdio = stdioServerProblems(result.workflow);
    const refused = [...(skipStdio ? [] : stdio), ...compiled.errors, ...compiled.deploy];
    for (const error of refused) problems.push(`${file}: ${error.code} ${error.message}`);
    if (refused.length > 0) continue;
    if (stdio.length > 0) {
      skipped.push(file);
      const reasons = stdio.map((error) => `${error.code} ${error.message}`).join('; ');
      warn(
        `stepthread: warning: ${file} (workflow ${result.workflow.id}) is left out of the deploy: ${reasons}`,
      );
      continue;
    }
    loaded.push({ file, workflow: result.workflow });
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
    throw new StepthreadError(
      'DEPLOY_CONFIG_INVALID',
      skipped.length === 0
        ? `no workflow files (.json, .yaml, .yml) under ${dir}`
        : `nothing to deploy under ${dir}: every workflow needs a stdio MCP server, which runs only locally (${skipped.join(', ')})`,
    );
  }
  return loaded;
}
