/**
 * `stepthread dev [workflows] [--port N] [--data-dir DIR] [--target aws [--stack NAME] [--prefix PREFIX]]`: the local
 * server and web console. One process on 127.0.0.1 owns the local stores (the data directory), runs
 * workflows in-process and serves the JSON API, the live event stream and the console until
 * interrupted (Ctrl-C). With --target aws it serves a deployed stack instead: its table and bucket,
 * the status, input, output and history of its executions from Step Functions, and runs started and
 * answered through Step Functions (cli/dev/server.ts, cli/dev/deployed-view.ts).
 */
import { resolve } from 'node:path';
import type { Command } from 'commander';
import { resolveAwsTarget } from '../../functions/aws/target.ts';
import { resumeCommand } from '../../functions/local/interaction-hints.ts';
import { createInteractionStore } from '../../functions/stores/interaction-store.ts';
import { deployedReplyWatch, type ReplyWatch } from '../dev/remote-replies.ts';
import { type DeployedStack, startDevServer, workflowsFolderProblem } from '../dev/server.ts';
import { type CliIo, EXIT } from '../io.ts';
import {
  codedOf,
  commandForm,
  type DataDirOption,
  dataDirArgument,
  NO_CACHE_OPTION_HELP,
  openStores,
  printErrors,
  STACK_OPTION_HELP,
  stackCacheDir,
} from '../local-session.ts';
import { nodeLogsPrinter } from '../node-logs.ts';
import { type DeployedServices, deployedSfn, NO_DEPLOYED_STACK } from './start.ts';

export interface DevOptions extends DataDirOption {
  port?: string;
  host?: string;
  /** `local` (default): the embedded stores and runtime; `aws`: a deployed stack. */
  target?: string;
  /** The deployed state machines' name prefix (`<prefix>-<workflowId>`). */
  prefix?: string;
}

/** The stack's streamed replies for the console, when it has an Events API (a note on stderr if not). */
async function deployedReplies(options: DevOptions, io: CliIo): Promise<ReplyWatch | undefined> {
  const env = io.env ?? process.env;
  const target = resolveAwsTarget(env, { dynamoEndpoint: 'embedded', s3Endpoint: 'embedded' });
  if (target.kind === 'embedded') return undefined;
  const cacheDir = stackCacheDir(options, io);
  return deployedReplyWatch(
    env,
    target,
    { ...(options.stack ? { stack: options.stack } : {}), ...(cacheDir ? { cacheDir } : {}) },
    (text) => io.stderr(`note: ${text}`),
  );
}

/** Serves until `stop` resolves, then shuts the server down and closes the stores. */
export async function runDev(
  folder: string,
  options: DevOptions,
  io: CliIo,
  stop: Promise<void> = interrupted(),
  services: DeployedServices = {},
): Promise<number> {
  const port = options.port === undefined ? 4317 : Number(options.port);
  if (!Number.isInteger(port) || port < 0 || port > 65_535) {
    io.stderr(`stepthread: USAGE_ERROR: --port must be a port number, not ${options.port}\n`);
    return EXIT.usage;
  }
  const target = options.target ?? 'local';
  if (target !== 'local' && target !== 'aws') {
    io.stderr(`stepthread: USAGE_ERROR: --target is local or aws, not ${target}\n`);
    return EXIT.usage;
  }
  const env = io.env ?? process.env;
  // A deployed stack: its table and bucket ($STEPTHREAD_TABLE / $STEPTHREAD_BUCKET, or LocalStack
  // by AWS_ENDPOINT_URL), and its state machines.
  const storeIo: CliIo =
    target === 'aws' && env.AWS_ENDPOINT_URL === undefined
      ? { ...io, env: { ...env, STEPTHREAD_TARGET: 'aws' } }
      : io;
  let deployed: DeployedStack | undefined;
  if (target === 'aws') {
    const sfn = deployedSfn(storeIo, services);
    if (sfn === undefined) {
      io.stderr(`stepthread: ${NO_DEPLOYED_STACK}\n`);
      return EXIT.usage;
    }
    const replies = await deployedReplies(options, storeIo);
    deployed = {
      sfn,
      prefix: options.prefix ?? env.STEPTHREAD_NAME_PREFIX ?? 'stepthread',
      ...(replies ? { replies } : {}),
    };
  }
  // Checked before the stores open, so a mistyped folder leaves no data directory behind.
  const workflowsDir = resolve(io.cwd ?? process.cwd(), folder);
  const folderProblem = workflowsFolderProblem(workflowsDir);
  if (folderProblem) {
    printErrors(io, `cannot serve ${folder}`, [folderProblem.toJSON()]);
    return EXIT.usage;
  }
  let session: Awaited<ReturnType<typeof openStores>>;
  try {
    session = await openStores(options, storeIo);
  } catch (error) {
    printErrors(io, 'cannot open the local stores', [codedOf(error)]);
    return EXIT.invalid;
  }
  let server: Awaited<ReturnType<typeof startDevServer>>;
  try {
    server = await startDevServer({
      clients: session.clients,
      workflowsDir,
      port,
      commandForm: commandForm(io, dataDirArgument(options)),
      // What a CODE node prints, in this terminal too, as `run` shows it (the console shows it as well).
      onNodeLogs: nodeLogsPrinter(io),
      ...(options.host ? { host: options.host } : {}),
      ...(deployed ? { deployed } : {}),
    });
  } catch (error) {
    await session.close();
    printErrors(io, 'cannot start the dev server', [codedOf(error)]);
    return EXIT.invalid;
  }
  try {
    io.stdout(
      `stepthread dev: console at ${server.url}  (workflows: ${folder}, data: ${session.location})\n`,
    );
    await stop;
    // With runs in flight (a question waiting for its answer included), stop at once, as `run`
    // does on Ctrl-C: they are left as they are, INTERRUPTED in `runs`, and `resume` goes on with each.
    const unfinished = server.unfinishedRuns();
    if (unfinished.length > 0 && io.exit) {
      // A run at a question resumes with its answer: with no terminal, a bare resume stops again.
      const open = await createInteractionStore(session.clients)
        .listOpen()
        .catch(() => []);
      const resume = unfinished
        .map((id) => {
          const waiting = open.filter((interaction) => interaction.executionId === id);
          return `\n  ${resumeCommand(id, waiting, commandForm(io, dataDirArgument(options)))}`;
        })
        .join('');
      io.stderr(
        `stepthread dev: stopped; ${unfinished.length} run(s) were interrupted, resume with:${resume}\n`,
      );
      io.exit(130);
    }
    io.stderr('stepthread dev: stopping\n');
    await server.close();
    return EXIT.ok;
  } catch (error) {
    printErrors(io, 'the dev server failed', [codedOf(error)]);
    return EXIT.invalid;
  } finally {
    await session.close();
  }
}

function interrupted(): Promise<void> {
  return new Promise((resolve) => {
    process.once('SIGINT', () => resolve());
    process.once('SIGTERM', () => resolve());
  });
}

export function registerDev(program: Command, io: CliIo, setExit: (code: number) => void): void {
  program
    .command('dev')
    .description('serve the local web console and its JSON API over the local stores (127.0.0.1)')
    .argument('[workflows]', 'folder of workflow files the console lists', '.')
    .option('--port <n>', 'port to listen on (0: any free one)', '4317')
    .option('--host <address>', 'address to bind (default 127.0.0.1; anything else exposes your runs)')
    .option('--data-dir <dir>', 'local data directory (default: $STEPTHREAD_DATA_DIR or ./.stepthread)')
    .option(
      '--target <local|aws>',
      'aws: serve a deployed stack (its stores; runs start on Step Functions)',
      'local',
    )
    .option('--stack <name>', `with --target aws: the ${STACK_OPTION_HELP}`)
    .option('--no-cache', NO_CACHE_OPTION_HELP)
    .option(
      '--prefix <prefix>',
      'with --target aws: the state machine name prefix (default: $STEPTHREAD_NAME_PREFIX or "stepthread")',
    )
    .action(async (folder: string, options: DevOptions) => {
      setExit(await runDev(folder, options, io));
    });
}
