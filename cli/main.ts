/**
 * The stepthread CLI. Each command lives in cli/commands/ and registers itself on the program; main
 * returns the exit code instead of exiting, so tests can run it in-process.
 */
import { Command, CommanderError } from 'commander';
import { registerCompile } from './commands/compile.ts';
import { registerCopy } from './commands/copy.ts';
import { registerInspect } from './commands/inspect.ts';
import { registerPending } from './commands/pending.ts';
import { registerRespond } from './commands/respond.ts';
import { registerResume } from './commands/resume.ts';
import { registerRun } from './commands/run.ts';
import { registerRuns } from './commands/runs.ts';
import { type DeployedServices, registerStart } from './commands/start.ts';
import { registerValidate } from './commands/validate.ts';
import { type CliIo, EXIT, processIo } from './io.ts';

/** `argv` is process.argv style: [node, script, ...args]; `services` replaces the Step Functions client (tests). */
export async function main(
  argv: readonly string[],
  io: CliIo = processIo,
  services: DeployedServices = {},
): Promise<number> {
  // The SDK warns on Node 20 at client construction; users can do nothing about it mid-run.
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
  let exitCode: number = EXIT.ok;
  const program = new Command()
    .name('stepthread')
    .description('Run LLM-agent workflow graphs as AWS Step Functions state machines, on AWS or offline.')
    .exitOverride()
    .showHelpAfterError('(run stepthread --help for usage)')
    .configureOutput({ writeOut: io.stdout, writeErr: io.stderr });
  const setExit = (code: number): void => {
    exitCode = code;
  };
  registerValidate(program, io, setExit);
  registerCompile(program, io, setExit);
  registerRun(program, io, setExit);
  registerResume(program, io, setExit);
  registerRuns(program, io, setExit);
  registerInspect(program, io, setExit);
  registerCopy(program, io, setExit);
  registerStart(program, io, setExit, services);
  registerPending(program, io, setExit);
  registerRespond(program, io, setExit, services);

  if (argv.length <= 2) {
    program.outputHelp({ error: true });
    return EXIT.usage;
  }
  try {
    await program.parseAsync([...argv], { from: 'node' });
  } catch (error) {
    if (error instanceof CommanderError) {
      // --help and --version end with code 0 through the same path.
      return error.exitCode === 0 ? EXIT.ok : EXIT.usage;
    }
    io.stderr(`stepthread: ${(error as Error).message}\n`);
    return EXIT.usage;
  }
  return exitCode;
}
