/**
 * `stepthread copy <threadId> [--from <nodeId|step>]`: an independent replica of a thread (seed 002),
 * status CREATED with fresh step bookkeeping; prints the new thread id. Without --from it is the
 * thread as it is now (at its current node: a failed thread's failing node, a completed thread's END);
 * with --from, the thread as it was just before that step ran (variables, conversation, loop state,
 * node results), rebuilt from its step records. `run <workflow> --thread <id>` then runs it.
 */
import type { Command } from 'commander';
import { createLocalRuntime } from '../../functions/local/runtime.ts';
import { type CliIo, EXIT } from '../io.ts';
import { type DataDirOption, NO_CACHE_OPTION_HELP, STACK_OPTION_HELP, withStores } from '../local-session.ts';

export interface CopyOptions extends DataDirOption {
  from?: string;
}

export async function runCopy(threadId: string, options: CopyOptions, io: CliIo): Promise<number> {
  return withStores(
    { ...options, mustExist: true },
    io,
    (session) => (session ? `cannot copy thread ${threadId}` : 'cannot open the stores'),
    async (session) => {
      const runtime = createLocalRuntime({ clients: session.clients });
      const copy = await runtime.copyThread(threadId, copyPointOf(options.from));
      io.stdout(`${copy.id}\n`);
      if (copy.metadata.forkPathId !== undefined) {
        io.stderr(
          `note: ${threadId} is a fork branch's thread; its copy is for inspecting and comparing, and cannot run on its own (its nodes run inside their FORK)\n`,
        );
      }
      return EXIT.ok;
    },
  );
}

/** `--from 7` is a step number; anything else names a node (node ids may not be all digits). */
function copyPointOf(from: string | undefined): { fromNodeId?: string; fromStep?: number } {
  if (from === undefined) return {};
  return /^\d+$/.test(from) ? { fromStep: Number(from) } : { fromNodeId: from };
}

export function registerCopy(program: Command, io: CliIo, setExit: (code: number) => void): void {
  program
    .command('copy')
    .description('copy a thread into a new runnable one (status CREATED); prints the new thread id')
    .argument('<threadId>', 'the thread to copy')
    .option(
      '--from <nodeId|step>',
      "time travel: the thread as it was before that step (or that node's latest run), ready to run it again (default: the source thread's current state)",
    )
    .option('--data-dir <dir>', 'local data directory (default: $STEPTHREAD_DATA_DIR or ./.stepthread)')
    .option('--stack <name>', STACK_OPTION_HELP)
    .option('--no-cache', NO_CACHE_OPTION_HELP)
    .action(async (threadId: string, options: CopyOptions) => {
      setExit(await runCopy(threadId, options, io));
    });
}
