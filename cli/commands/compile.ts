/**
 * `stepthread compile <workflow>`: validate, then print the ASL definition (exit 1 when invalid), its size
 * as Step Functions counts it on stderr, and with `--node-table FILE` the node table its Tasks name.
 */
import { writeFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import type { Command } from 'commander';
import { compileWorkflow, MAX_DEFINITION_BYTES } from '../../engine/asl/index.ts';
import { deployLimitProblems } from '../../engine/validation/deploy-limits.ts';
import {
  CONTINUE_AFTER_HELP,
  type ContinueAfterOption,
  continueAfterEventsOf,
  reportThresholdRefused,
} from '../continuation.ts';
import { formatCodedError } from '../format.ts';
import { type CliIo, EXIT } from '../io.ts';
import { codedOf, loadValidWorkflow, printErrors } from '../local-session.ts';

export interface CompileOptions extends ContinueAfterOption {
  /** Where to write the node table (engine/asl/node-table.ts) the printed definition's Tasks name. */
  nodeTable?: string;
}

const bytes = (n: number) => n.toLocaleString('en-US');

export async function runCompile(file: string, io: CliIo, options: CompileOptions = {}): Promise<number> {
  const threshold = continueAfterEventsOf(options, io);
  if (!threshold.ok) return reportThresholdRefused(threshold, io);
  const loaded = await loadValidWorkflow(file, io);
  if (!loaded.ok) return loaded.exitCode;
  try {
    const { definition, definitionBytes, nodeTable } = compileWorkflow(
      loaded.workflow,
      threshold.value === undefined ? {} : { continueAfterEvents: threshold.value },
    );
    io.stdout(`${JSON.stringify(definition, null, 2)}\n`);
    // Node configs are in the node table: the definition's size is the graph's alone.
    io.stderr(
      `stepthread: definition ${bytes(definitionBytes)} bytes of Step Functions' ${bytes(MAX_DEFINITION_BYTES)} (function ARNs at their longest); node table ${nodeTable.ref}: ${bytes(Buffer.byteLength(nodeTable.json))} bytes\n`,
    );
    if (options.nodeTable !== undefined) {
      await writeFile(resolve(io.cwd ?? process.cwd(), options.nodeTable), nodeTable.json);
    }
    // It runs locally as printed; a deploy would refuse it (the deploy names the file and exits 1).
    for (const problem of deployLimitProblems(loaded.workflow, definition))
      io.stderr(`stepthread: warning: ${formatCodedError(problem)}\n`);
    return EXIT.ok;
  } catch (error) {
    printErrors(io, `${file} could not be compiled`, [codedOf(error)]);
    return EXIT.invalid;
  }
}

export function registerCompile(program: Command, io: CliIo, setExit: (code: number) => void): void {
  program
    .command('compile')
    .description('validate a workflow and print its Amazon States Language definition')
    .argument('<workflow>', 'workflow file: .json, .yaml or .yml')
    .option('--continue-after-events <n|off>', CONTINUE_AFTER_HELP)
    .option('--node-table <file>', "write the node table the definition's Tasks name (its nodes' configs)")
    .action(async (file: string, options: CompileOptions) => {
      setExit(await runCompile(file, io, options));
    });
}
