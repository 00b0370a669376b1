/**
 * `stepthread copy <threadId> [--from <nodeId>]`: an independent replica of a thread (seed 002),
 * status CREATED with fresh step bookkeeping; prints the new thread id. `run <workflow> --thread <id>`
 * then runs it from its current node: the source's current node (a failed thread's failing node,
 * a completed thread's END) or the top-level node given with --from.
 */
import type { Command } from 'commander';
import { createLocalRuntime } from '../../functions/local/runtime.ts';
import { type CliIo, EXIT } from '../io.ts';
import { type DataDirOption, withStores } from '../local-session.ts';

export interface CopyOptions extends DataDirOption {
  from?: string;
}

export async function runCopy(threadId: string, options: CopyOptions, io: CliIo): Promise<number> {
  return withStores(
    options,
    io,
    (session) => (session ? `cannot copy thread ${threadId}` : 'cannot open the stores'),
    async (session) => {
      const runtime = createLocalRuntime({ clients: session.clients });
      const copy = await runtime.copyThread(threadId, options.from ? { fromNodeId: options.from } : {});
      io.stdout(`${copy.id}\n`);
      return EXIT.ok;
    },
  );
}

export function registerCopy(program: Command, io: CliIo, setExit: (code: number) => void): void {
  program
    .command('copy')
    .description('copy a thread into a new runnable one (status CREATED); prints the new thread id')
    .argument('<threadId>', 'the thread to copy')
    .option(
      '--from <nodeId>',
      "the top-level node the copy runs from (default: the source thread's current node)",
    )
    .option('--data-dir <dir>', 'local data directory (default: $STEPTHREAD_DATA_DIR or ./.stepthread)')
    .action(async (threadId: string, options: CopyOptions) => {
      setExit(await runCopy(threadId, options, io));
    });
}
