/** `stepthread validate [--json] <file>`: exit 0 valid, 1 invalid, 2 unreadable file. */
import type { Command } from 'commander';
import type { CodedError } from '../../engine/errors.ts';
import { compiledProblems } from '../../engine/validation/deploy-limits.ts';
import { stdioServerProblems } from '../../engine/validation/mcp-rules.ts';
import { checkWorkflow } from '../check-workflow.ts';
import { formatCodedError, jsonReport } from '../format.ts';
import { type CliIo, EXIT } from '../io.ts';
import { loadWorkflowFile } from '../load-workflow.ts';
import { schemaReferenceNote } from '../schema-note.ts';

export interface ValidateOptions {
  json?: boolean;
}

export async function runValidate(file: string, options: ValidateOptions, io: CliIo): Promise<number> {
  const loaded = await loadWorkflowFile(file, io);
  if (loaded.kind === 'unreadable') {
    // --json always prints its report, a file it cannot read included (exit 2 still says which).
    if (options.json) io.stdout(jsonReport(false, [loaded.error]));
    else io.stderr(`stepthread: ${formatCodedError(loaded.error)}\n`);
    return EXIT.usage;
  }
  const { errors, warnings } =
    loaded.kind === 'unparsable' ? { errors: [loaded.error], warnings: [] } : await check(loaded.data);
  const valid = errors.length === 0;
  if (loaded.kind === 'loaded' && !options.json) {
    const note = schemaReferenceNote(file, loaded.data, io.cwd ?? process.cwd());
    if (note !== undefined) io.stderr(`${note}\n`);
  }
  if (options.json) {
    io.stdout(jsonReport(valid, errors, warnings));
  } else if (valid) {
    io.stdout(`${file}: valid${warnings.length > 0 ? ' locally (it cannot be deployed as it is)' : ''}\n`);
  } else {
    io.stdout(`${file}: ${errors.length} error${errors.length === 1 ? '' : 's'}\n`);
    for (const error of errors) io.stdout(`  ${formatCodedError(error)}\n`);
  }
  if (!options.json) for (const warning of warnings) io.stdout(`  warning: ${formatCodedError(warning)}\n`);
  return valid ? EXIT.ok : EXIT.invalid;
}

/**
 * Validation, then what the compiler would still refuse (a definition over 1 MiB). Warnings: what
 * runs locally but a deploy refuses (a stdio MCP server, a limit of CloudFormation or EventBridge).
 */
async function check(data: unknown): Promise<{ errors: CodedError[]; warnings: CodedError[] }> {
  const result = await checkWorkflow(data);
  if (!result.valid || !result.workflow) return { errors: result.errors, warnings: [] };
  const { errors, deploy } = compiledProblems(result.workflow);
  return { errors, warnings: [...stdioServerProblems(result.workflow), ...deploy] };
}

export function registerValidate(program: Command, io: CliIo, setExit: (code: number) => void): void {
  program
    .command('validate')
    .description('check a workflow file (JSON or YAML) and print every problem found')
    .argument('<workflow>', 'workflow file: .json, .yaml or .yml')
    .option('--json', 'print a JSON report: {"valid": boolean, "errors": [...], "warnings"?: [...]}')
    .action(async (file: string, options: ValidateOptions) => {
      setExit(await runValidate(file, options, io));
    });
}
