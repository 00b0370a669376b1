/**
 * `stepthread dev [workflows] [--port N] [--data-dir DIR]`: the local server and web console. One
 * process on 127.0.0.1 owns the local stores (the data directory), runs workflows in-process and
 * serves the JSON API, the live event stream and the console until interrupted (Ctrl-C).
 */
import type { Command } from 'commander';
import { startDevServer } from '../dev/server.ts';
import { type CliIo, EXIT } from '../io.ts';
import { codedOf, type DataDirOption, openStores, printErrors } from '../local-session.ts';

export interface DevOptions extends DataDirOption {
  port?: string;
  host?: string;
}

/** Resolves once the server is up; `stopped` resolves when it has shut down. */
export async function runDev(
  folder: string,
  options: DevOptions,
  io: CliIo,
  stop: Promise<void> = interrupted(),
): Promise<number> {
  const port = options.port === undefined ? 4317 : Number(options.port);
  if (!Number.isInteger(port) || port < 0 || port > 65_535) {
    io.stderr(`stepthread: --port must be a port number, not ${options.port}\n`);
    return EXIT.usage;
  }
  let session: Awaited<ReturnType<typeof openStores>>;
  try {
    session = await openStores(options, io);
  } catch (error) {
    printErrors(io, 'cannot open the local stores', [codedOf(error)]);
    return EXIT.invalid;
  }
  try {
    const server = await startDevServer({
      clients: session.clients,
      workflowsDir: folder,
      port,
      ...(options.host ? { host: options.host } : {}),
    });
    io.stdout(
      `stepthread dev: console at ${server.url}  (workflows: ${folder}, data: ${session.location})\n`,
    );
    await stop;
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
    .action(async (folder: string, options: DevOptions) => {
      setExit(await runDev(folder, options, io));
    });
}
