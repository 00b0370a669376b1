/**
 * `stepthread copy <threadId> [--from <nodeId|step>]`: an independent replica of a thread (seed 002),
 * status CREATED with fresh step bookkeeping; prints the new thread id. Without --from it is the
 * thread as it is now (at its current node: a failed thread's failing node, a completed thread's END;
 * a stopped run's thread at the node it was stopped at, whose step left no trace);
 * with --from, the thread as it was just before that step ran (variables, conversation, loop state,
 * node results), rebuilt from its step records. `run <workflow> --thread <id>` then runs it.
 * `--set <variable>=<json>` and `--input` edit the copy's state before it runs
 * (engine/thread/copy-edits.ts), `--profile` and `--node-config` the workflow it runs with
 * (engine/thread/copy-workflow-edits.ts): checked against the workflow its source ran, recorded on the
 * copy; a refused edit writes nothing. On a deployed stack the edits are checked against the workflow
 * its state machine's definition holds (declarations, nodes, profiles), and node config and profile
 * edits take effect through the handlers (engine/thread/node-overlay.ts); `start --thread` runs it.
 */
import type { Command } from 'commander';
import { createLocalRuntime } from '../../functions/local/runtime.ts';
import {
  addCopyEditOptions,
  type CopyEditOptions,
  copyEditsOfOptions,
  isRefusedEdit,
  reportRefusedEdit,
} from '../copy-edit-options.ts';
import { definitionsOnStack, deployedCopyChecks, deployedStoppedAt } from '../deployed/copy-checks.ts';
import { stackNodeTables } from '../deployed/workflow-declarations.ts';
import { givenOnce } from '../given-once.ts';
import { type CliIo, EXIT } from '../io.ts';
import {
  type DataDirOption,
  NO_CACHE_OPTION_HELP,
  STACK_OPTION_HELP,
  type StoreSession,
  withStores,
} from '../local-session.ts';
import type { DeployedServices, SfnLike } from './start.ts';

export { parseSetEdit } from '../copy-edit-options.ts';

export interface CopyOptions extends DataDirOption, CopyEditOptions {
  from?: string;
}

export async function runCopy(
  threadId: string,
  options: CopyOptions,
  io: CliIo,
  services: DeployedServices = {},
): Promise<number> {
  const parsed = await copyEditsOfOptions(options, io);
  if (!parsed.ok) return parsed.exitCode;
  const { edits } = parsed;
  // A deployed stack (--stack; a stand-in Step Functions client in tests) runs its copies on its
  // state machines as deployed.
  const deployed = options.stack !== undefined || services.sfn !== undefined;
  return withStores(
    { ...options, mustExist: true },
    io,
    (session) => (session ? `cannot copy thread ${threadId}` : 'cannot open the stores'),
    async (session) => {
      const runtime = createLocalRuntime({ clients: session.clients });
      const definitionOf = deployed
        ? definitionsOnStack(services.sfn ?? sfnOf(session), stackNodeTables(session.clients))
        : undefined;
      const onStack =
        definitionOf && edits.length > 0
          ? await deployedCopyChecks(runtime, threadId, definitionOf, edits, io)
          : {};
      const copy = await runtime
        .copyThread(threadId, {
          ...copyPointOf(options.from),
          ...(edits.length > 0 ? { edits } : {}),
          ...onStack,
          ...(deployed ? { deployed } : {}),
          ...(definitionOf && options.from === undefined
            ? { stoppedAt: deployedStoppedAt(definitionOf) }
            : {}),
        })
        .catch((error: unknown) => {
          if (isRefusedEdit(error)) return error;
          throw error;
        });
      if (copy instanceof Error) {
        return reportRefusedEdit(io, `cannot copy thread ${threadId}: an edit is refused`, copy);
      }
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

function sfnOf(session: StoreSession): SfnLike {
  return session.clients.sfn as unknown as SfnLike;
}

/** `--from 7` is a step number; anything else names a node (node ids may not be all digits). */
export function copyPointOf(from: string | undefined): { fromNodeId?: string; fromStep?: number } {
  if (from === undefined) return {};
  return /^\d+$/.test(from) ? { fromStep: Number(from) } : { fromNodeId: from };
}

export function registerCopy(
  program: Command,
  io: CliIo,
  setExit: (code: number) => void,
  services: DeployedServices = {},
): void {
  const command = program
    .command('copy')
    .description('copy a thread into a new runnable one (status CREATED); prints the new thread id')
    .argument('<threadId>', 'the thread to copy')
    .option(
      '--from <nodeId|step>',
      "time travel: the thread as it was before that step (or that node's latest run), ready to run it again (default: the source thread's current state)",
      givenOnce('--from', 'a copy starts from one point'),
    );
  addCopyEditOptions(command)
    .option('--data-dir <dir>', 'local data directory (default: $STEPTHREAD_DATA_DIR or ./.stepthread)')
    .option('--stack <name>', STACK_OPTION_HELP)
    .option('--no-cache', NO_CACHE_OPTION_HELP)
    .action(async (threadId: string, options: CopyOptions) => {
      setExit(await runCopy(threadId, options, io, services));
    });
}
