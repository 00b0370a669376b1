/** `stepthread compile <workflow>`: validate, then print the ASL definition (exit 1 when invalid). */
import type { Command } from 'commander';
import { compileWorkflow } from '../../engine/asl/index.ts';
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

export async function runCompile(
  file: string,
  io: CliIo,
  options: ContinueAfterOption = {},
): Promise<number> {
  const threshold = continueAfterEventsOf(options, io);
  if (!threshold.ok) return reportThresholdRefused(threshold, io);
  const loaded = await loadValidWorkflow(file, io);
  if (!loaded.ok) return loaded.exitCode;
  try {
    const { definition } = compileWorkflow(
      loaded.workflow,
      threshold.value === undefined ? {} : { continueAfterEvents: threshold.value },
    );
    io.stdout(`${JSON.stringify(definition, null, 2)}\n`);
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
    .action(async (file: string, options: ContinueAfterOption) => {
      setExit(await runCompile(file, io, options));
    });
}
