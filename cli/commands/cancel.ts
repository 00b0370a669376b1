/**
 * `stepthread cancel <executionId|threadId> [--reason <text>] [--json]`: ends a run CANCELLED, for
 * good (functions/cancel/cancel-run.ts). Its cancel mark stops the model, tool or question calls it
 * waits on — a run of another process on this data directory within a quarter second, a deployed
 * run's LLM and TOOL functions within their 2 s poll — and on a deployed stack (`--stack`) its
 * execution is stopped (StopExecution). Its threads, fork branches and list items end CANCELLED with
 * the reason, its open questions are closed, and `resume` refuses it (RUN_CANCELLED); `copy --from`
 * still copies its threads to run again.
 */
import { StopExecutionCommand } from '@aws-sdk/client-sfn';
import type { Command } from 'commander';
import { StepthreadError } from '../../engine/errors.ts';
import type { CancelOutcome } from '../../functions/cancel/cancel-run.ts';
import type { CancelMark } from '../../functions/cancel/marks.ts';
import { createLocalRuntime } from '../../functions/local/runtime.ts';
import { type CliIo, EXIT } from '../io.ts';
import {
  type DataDirOption,
  NO_CACHE_OPTION_HELP,
  STACK_OPTION_HELP,
  type StoreSession,
  withStores,
} from '../local-session.ts';
import type { DeployedServices, SfnLike } from './start.ts';

export interface CancelOptions extends DataDirOption {
  reason?: string;
  json?: boolean;
}

/** What `cancel --json` prints. */
export interface CancelJson {
  executionId: string;
  threadId: string;
  status: 'CANCELLED';
  /** The reason the run was cancelled with (the first cancel's, when it was cancelled before). */
  reason: string | null;
  /** Cancelled before this command: nothing changed. */
  alreadyCancelled: boolean;
  threadsCancelled: number;
  interactionsClosed: number;
}

/** The execution's error and cause in Step Functions when stepthread stops it. */
export const STOPPED_ERROR = 'stepthread.Cancelled';

/**
 * StopExecution for a deployed execution (an ARN); a local execution id has none to stop. An
 * execution that already ended is left as it ended.
 */
export function stopDeployedExecution(sfn: SfnLike): (mark: CancelMark) => Promise<void> {
  return async (mark) => {
    if (!mark.executionId.startsWith('arn:')) return;
    try {
      await sfn.send(
        new StopExecutionCommand({
          executionArn: mark.executionId,
          error: STOPPED_ERROR,
          cause: mark.reason ?? 'cancelled with stepthread cancel',
        }),
      );
    } catch (error) {
      if ((error as { name?: string }).name !== 'ExecutionDoesNotExist') throw error;
    }
  };
}

/** The Step Functions client of the stack the session reads; none for the local data directory. */
function sfnOf(session: StoreSession, services: DeployedServices): SfnLike | undefined {
  if (session.dataDir !== undefined) return undefined;
  return services.sfn ?? (session.clients.sfn as unknown as SfnLike);
}

/** A cancelled run as `--json` (and dev's API) gives it. */
export function cancelJsonOf(outcome: CancelOutcome): CancelJson {
  return {
    executionId: outcome.executionId,
    threadId: outcome.rootThreadId,
    status: 'CANCELLED',
    reason: outcome.reason ?? null,
    alreadyCancelled: outcome.alreadyCancelled,
    threadsCancelled: outcome.threadsCancelled,
    interactionsClosed: outcome.interactionsClosed,
  };
}

function printOutcome(outcome: CancelOutcome, options: CancelOptions, io: CliIo): void {
  if (options.json) {
    io.stdout(`${JSON.stringify(cancelJsonOf(outcome), null, 2)}\n`);
    return;
  }
  const why = outcome.reason === undefined ? '' : ` (${outcome.reason})`;
  if (outcome.alreadyCancelled && outcome.threadsCancelled === 0) {
    io.stdout(`execution ${outcome.executionId} was cancelled already${why}\n`);
    return;
  }
  const threads = `${outcome.threadsCancelled} thread${outcome.threadsCancelled === 1 ? '' : 's'}`;
  const questions =
    outcome.interactionsClosed === 0
      ? ''
      : `, ${outcome.interactionsClosed} question${outcome.interactionsClosed === 1 ? '' : 's'} closed`;
  io.stdout(
    `cancelled execution ${outcome.executionId} (thread ${outcome.rootThreadId})${why}: ${threads} CANCELLED${questions}\n`,
  );
}

export async function runCancel(
  ref: string,
  options: CancelOptions,
  io: CliIo,
  services: DeployedServices = {},
): Promise<number> {
  return withStores(
    { ...options, mustExist: true },
    io,
    (session) => (session ? `cannot cancel ${ref}` : 'cannot open the stores'),
    async (session) => {
      const runtime = createLocalRuntime({ clients: session.clients });
      const sfn = sfnOf(session, services);
      const outcome = await runtime.cancel(ref, {
        ...(options.reason === undefined ? {} : { reason: options.reason }),
        ...(sfn === undefined ? {} : { stop: stopDeployedExecution(sfn) }),
      });
      if (outcome.status !== 'CANCELLED') {
        throw new StepthreadError(
          'RUN_ALREADY_ENDED',
          `execution ${outcome.executionId} ended ${outcome.status} before it could be cancelled; nothing was changed`,
        );
      }
      printOutcome(outcome, options, io);
      return EXIT.ok;
    },
  );
}

export function registerCancel(
  program: Command,
  io: CliIo,
  setExit: (code: number) => void,
  services: DeployedServices = {},
): void {
  program
    .command('cancel')
    .description(
      'end a run CANCELLED for good: the model and tool calls it waits on are closed, its threads and open questions end, and resume refuses it',
    )
    .argument('<id>', 'an execution id (ARN on a stack) or a thread id of the run')
    .option('--reason <text>', 'why; kept in the THREAD_CANCELLED events and shown by inspect')
    .option(
      '--json',
      'print {"executionId","threadId","status","reason","alreadyCancelled","threadsCancelled","interactionsClosed"}',
    )
    .option('--data-dir <dir>', 'local data directory (default: $STEPTHREAD_DATA_DIR or ./.stepthread)')
    .option('--stack <name>', STACK_OPTION_HELP)
    .option('--no-cache', NO_CACHE_OPTION_HELP)
    .action(async (id: string, options: CancelOptions) => {
      setExit(await runCancel(id, options, io, services));
    });
}
