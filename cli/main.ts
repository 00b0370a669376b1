/**
 * The stepthread CLI. Each command lives in cli/commands/ and registers itself on the program; main
 * returns the exit code instead of exiting, so tests can run it in-process.
 *
 * Commands load lazily: `stepthread <command>` imports that command's module only, so `validate` never
 * loads the AWS SDK or the embedded services. `--help` (no command) lists every command from
 * `commands.json`, a summary `npm run build` writes next to the compiled CLI (see `commandSummaries`);
 * from the sources, without it, every command module is imported instead.
 */
import { readFile } from 'node:fs/promises';
import { Command, CommanderError } from 'commander';
import type { DeployedServices } from './commands/start.ts';
import { cliInvocation, inUserForm } from './invocation.ts';
import { type CliIo, EXIT, processIo } from './io.ts';
import { packageVersion } from './package-info.ts';

type Register = (
  program: Command,
  io: CliIo,
  setExit: (code: number) => void,
  services: DeployedServices,
) => void;

/** Every command, in the order `--help` lists them. Add new ones here. */
const COMMANDS: Readonly<Record<string, () => Promise<Register>>> = {
  validate: async () => (await import('./commands/validate.ts')).registerValidate,
  compile: async () => (await import('./commands/compile.ts')).registerCompile,
  run: async () => (await import('./commands/run.ts')).registerRun,
  resume: async () => (await import('./commands/resume.ts')).registerResume,
  runs: async () => (await import('./commands/runs.ts')).registerRuns,
  inspect: async () => (await import('./commands/inspect.ts')).registerInspect,
  copy: async () => (await import('./commands/copy.ts')).registerCopy,
  diff: async () => (await import('./commands/diff.ts')).registerDiff,
  rerun: async () => (await import('./commands/rerun.ts')).registerRerun,
  prune: async () => (await import('./commands/prune.ts')).registerPrune,
  start: async () => (await import('./commands/start.ts')).registerStart,
  pending: async () => (await import('./commands/pending.ts')).registerPending,
  respond: async () => (await import('./commands/respond.ts')).registerRespond,
  cancel: async () => (await import('./commands/cancel.ts')).registerCancel,
  watch: async () => (await import('./commands/watch.ts')).registerWatch,
  dev: async () => (await import('./commands/dev.ts')).registerDev,
  version: async () => (await import('./commands/version.ts')).registerVersion,
};

/** One line of the top-level help: `run [options] <workflow>` and its description. */
export interface CommandSummary {
  name: string;
  term: string;
  description: string;
}

export const COMMAND_SUMMARIES_FILE = 'commands.json';

function newProgram(io: CliIo): Command {
  return new Command()
    .name('stepthread')
    .description('Run LLM-agent workflow graphs as AWS Step Functions state machines, on AWS or offline.')
    .version(packageVersion(), '-v, --version', 'print the stepthread version')
    .exitOverride()
    .showHelpAfterError('(run stepthread --help for usage)')
    .configureOutput({
      writeOut: io.stdout,
      writeErr: io.stderr,
      outputError: (text, write) => write(usageError(text)),
    });
}

/**
 * commander's own errors (an unknown flag or command, a missing argument) coded as the CLI's other
 * errors are, `stepthread: USAGE_ERROR: …`, its hints ("Did you mean --select?") kept. Help and
 * --version are no errors and do not come here.
 */
export function usageError(text: string): string {
  return `stepthread: USAGE_ERROR: ${text.replace(/^error: /, '')}`;
}

/** Registers every command for real and describes each as the top-level help shows it (build time). */
export async function commandSummaries(): Promise<CommandSummary[]> {
  const program = newProgram(processIo);
  for (const load of Object.values(COMMANDS)) (await load())(program, processIo, () => {}, {});
  const help = program.createHelp();
  return program.commands.map((command) => ({
    name: command.name(),
    term: help.subcommandTerm(command),
    description: help.subcommandDescription(command),
  }));
}

async function compiledSummaries(): Promise<CommandSummary[] | undefined> {
  try {
    const text = await readFile(new URL(`./${COMMAND_SUMMARIES_FILE}`, import.meta.url), 'utf8');
    return JSON.parse(text) as CommandSummary[];
  } catch {
    return undefined;
  }
}

/** `argv` is process.argv style: [node, script, ...args]; `services` replaces the Step Functions client (tests). */
export async function main(
  argv: readonly string[],
  given: CliIo = processIo,
  services: DeployedServices = {},
): Promise<number> {
  // What reaches stderr from below the CLI names commands as the user ran it (invocation.ts).
  const cli = cliInvocation(given.env ?? process.env);
  const io: CliIo =
    cli === 'stepthread' ? given : { ...given, stderr: (text) => given.stderr(inUserForm(text, cli)) };
  let exitCode: number = EXIT.ok;
  const program = newProgram(io);
  const setExit = (code: number): void => {
    exitCode = code;
  };
  // `stepthread <command> …` and `stepthread help <command>` need that command alone.
  const named = argv[2] === 'help' ? argv[3] : argv[2];
  const only = named !== undefined && Object.hasOwn(COMMANDS, named) ? named : undefined;
  let dropEarly = () => {};
  const summaries = only === undefined ? await compiledSummaries() : undefined;
  if (only !== undefined) {
    const register = COMMANDS[only]!();
    register.catch(() => {}); // awaited below
    // A run's store server starts while the command loads (early-stores.ts).
    if (only === 'run' && argv[2] === 'run') {
      dropEarly = (await import('./early-stores.ts')).openRunStoresEarly(argv.slice(3), io);
    }
    (await register)(program, io, setExit, services);
  } else if (summaries) {
    // Listing only: each command as a stub with its name and description, its help line as recorded.
    const terms = new Map(summaries.map((s) => [s.name, s.term]));
    const help = program.createHelp();
    const subcommandTerm = help.subcommandTerm.bind(help);
    program.configureHelp({
      subcommandTerm: (command) => terms.get(command.name()) ?? subcommandTerm(command),
    });
    for (const summary of summaries) program.command(summary.name).description(summary.description);
  } else {
    for (const load of Object.values(COMMANDS)) (await load())(program, io, setExit, services);
  }

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
  } finally {
    dropEarly();
  }
  return exitCode;
}
