/**
 * `stepthread pending [executionId|executionArn|threadId] [--json]`: open USER_INTERACTIONs, oldest
 * first, with what `stepthread respond` needs to answer each. One Query per execution (the thread's
 * partition, or the sparse open-interactions index), so operators need no Scan. An execution id of a
 * run that continued (continue-as-new) stands for the whole run: each of its executions is asked.
 */
import type { Command } from 'commander';
import { StepthreadError } from '../../engine/errors.ts';
import {
  type CommandForm,
  commandLine,
  otherAnswers,
  respondCommand,
  resumeCommand,
  toolCallLines,
} from '../../functions/local/interaction-hints.ts';
import { getLocalRun, runnerGone } from '../../functions/local/run-registry.ts';
import type { TableRef } from '../../functions/stores/dynamo-items.ts';
import { executionChainOf } from '../../functions/stores/execution-chain.ts';
import { createExecutionIndex, type ExecutionIndex } from '../../functions/stores/execution-index.ts';
import {
  createInteractionStore,
  type Interaction,
  type InteractionStore,
} from '../../functions/stores/interaction-store.ts';
import { createThreadStore } from '../../functions/stores/thread-store.ts';
import { type CliIo, EXIT } from '../io.ts';
import {
  commandForm,
  type DataDirOption,
  dataDirArgument,
  NO_CACHE_OPTION_HELP,
  STACK_OPTION_HELP,
  storeArguments,
  withStores,
} from '../local-session.ts';

export interface PendingOptions extends DataDirOption {
  json?: boolean;
}

/** What `pending --json` prints per interaction. */
export interface PendingJson {
  interactionId: string;
  executionId: string;
  workflowId: string;
  threadId: string;
  nodeId: string;
  interactionType: string;
  message?: string;
  options?: readonly string[];
  /** The variable an ask_for_input's answer is stored in, when its declared type bounds the answer. */
  answerVariable?: { name: string; type: string };
  requestedAt: string;
  deadline?: string;
  /** An LLM node's tool call held for approval: the tool, its arguments and the model's message. */
  toolCall?: { id: string; name: string; arguments: unknown; message: string };
}

/**
 * Open interactions of a thread (`t-…`), else of an execution's run (with `executions`, every
 * execution it continued in too; one GetItem per execution), else all of them.
 */
export async function openInteractions(
  store: InteractionStore,
  ref?: string,
  executions?: ExecutionIndex,
): Promise<Interaction[]> {
  if (ref === undefined) return store.listOpen();
  if (ref.startsWith('t-')) return store.listOpenOfThread(ref);
  const chain = executions === undefined ? [] : await executionChainOf(executions, ref);
  if (chain.length <= 1) return store.listOpenOfExecution(ref);
  const lists = await Promise.all(chain.map((record) => store.listOpenOfExecution(record.executionId)));
  return lists.flat();
}

/**
 * EXECUTION_NOT_FOUND, as inspect says it, for a ref that names no execution or thread here: a
 * mistyped id must not read as "nothing waits". Asked only when nothing is open (one GetItem).
 */
async function refuseUnknown(
  ref: string,
  table: TableRef,
  executions: ExecutionIndex,
  form: CommandForm,
): Promise<void> {
  const notFound = (code: string) => (error: unknown) => {
    if (error instanceof StepthreadError && error.code === code) return false;
    throw error;
  };
  const known = ref.startsWith('t-')
    ? await createThreadStore(table)
        .getThread(ref)
        .then(() => true, notFound('THREAD_NOT_FOUND'))
    : await executions.getExecution(ref).then(() => true, notFound('EXECUTION_NOT_FOUND'));
  if (!known) {
    throw new StepthreadError(
      'EXECUTION_NOT_FOUND',
      `execution or thread ${ref} not found (${commandLine(form, 'runs')} lists the executions here)`,
    );
  }
}

function asJson(interaction: Interaction): PendingJson {
  const { interactionId, executionId, workflowId, threadId, nodeId, interactionType, requestedAt } =
    interaction;
  return {
    interactionId,
    executionId,
    workflowId,
    threadId,
    nodeId,
    interactionType,
    ...(interaction.message === undefined ? {} : { message: interaction.message }),
    ...(interaction.options === undefined ? {} : { options: interaction.options }),
    ...(interaction.answerVariable === undefined
      ? {}
      : { answerVariable: { ...interaction.answerVariable } }),
    requestedAt,
    ...(interaction.deadline === undefined ? {} : { deadline: interaction.deadline }),
    ...(interaction.toolCall === undefined ? {} : { toolCall: { ...interaction.toolCall } }),
  };
}

/** Whether a local run's process is gone: then no process takes a `respond`, and `resume` answers. */
async function isInterrupted(
  table: TableRef,
  executions: ExecutionIndex,
  executionId: string,
): Promise<boolean> {
  const recordOf = (id: string) =>
    executions.getExecution(id).catch((error: unknown) => {
      if (error instanceof StepthreadError && error.code === 'EXECUTION_NOT_FOUND') return undefined;
      throw error;
    });
  const execution = await recordOf(executionId);
  if (execution === undefined) return false;
  return runnerGone(execution, { localOf: (id) => getLocalRun(table, id), executionOf: recordOf });
}

/** The line that says how to answer `interaction`, with the stores the command was given. */
async function howToAnswer(
  interaction: Interaction,
  options: PendingOptions,
  io: CliIo,
  local: { table: TableRef; executions: ExecutionIndex; interactions: InteractionStore } | undefined,
): Promise<string> {
  if (local && (await isInterrupted(local.table, local.executions, interaction.executionId))) {
    // Every question the run stopped at (a fork may have several): a resume without one stops at it.
    const waiting = await local.interactions.listOpenOfExecution(interaction.executionId);
    const resume = resumeCommand(
      interaction.executionId,
      waiting.length > 0 ? waiting : [interaction],
      commandForm(io, dataDirArgument(options)),
    );
    return `its run's process is gone; resume it with the answer: ${resume}`;
  }
  const other = otherAnswers(interaction.interactionType, interaction.answerVariable);
  return `${respondCommand(interaction, commandForm(io, storeArguments(options)))}${other ? `\n    (${other})` : ''}`;
}

export async function runPending(
  ref: string | undefined,
  options: PendingOptions,
  io: CliIo,
): Promise<number> {
  return withStores(
    { ...options, mustExist: true },
    io,
    (session) => (session ? 'cannot list pending interactions' : 'cannot open the stores'),
    async (session) => {
      const executions = createExecutionIndex(session.clients);
      const interactions = createInteractionStore(session.clients);
      const open = await openInteractions(interactions, ref, executions);
      // Locally only: a deployed execution just started has no record until its START Task runs.
      if (open.length === 0 && ref !== undefined && session.dataDir !== undefined) {
        await refuseUnknown(ref, session.clients, executions, commandForm(io, dataDirArgument(options)));
      }
      if (options.json) {
        io.stdout(`${JSON.stringify(open.map(asJson), null, 2)}\n`);
        return EXIT.ok;
      }
      if (open.length === 0) {
        io.stdout(`no pending interactions${ref ? ` for ${ref}` : ''}\n`);
        return EXIT.ok;
      }
      // Only a local run has a process that may be gone.
      const local =
        session.dataDir === undefined ? undefined : { table: session.clients, executions, interactions };
      for (const interaction of open) {
        io.stdout(`${interaction.interactionId}\n`);
        io.stdout(
          `  ${interaction.interactionType} at node ${interaction.nodeId} of ${interaction.workflowId}\n`,
        );
        if (interaction.toolCall === undefined && interaction.message !== undefined)
          io.stdout(`  ${interaction.message}\n`);
        for (const line of toolCallLines(interaction)) io.stdout(`  ${line}\n`);
        (interaction.options ?? []).forEach((option, i) => {
          io.stdout(`    ${i}) ${option}\n`);
        });
        io.stdout(
          `  asked ${interaction.requestedAt}${interaction.deadline ? `, answer before ${interaction.deadline}` : ''}\n`,
        );
        io.stdout(`  ${await howToAnswer(interaction, options, io, local)}\n`);
      }
      return EXIT.ok;
    },
  );
}

export function registerPending(program: Command, io: CliIo, setExit: (code: number) => void): void {
  program
    .command('pending')
    .description('list USER_INTERACTIONs waiting for an answer')
    .argument('[ref]', 'an execution id or ARN, or a thread id (default: every open interaction)')
    .option('--json', 'print a JSON array')
    .option('--data-dir <dir>', 'local data directory (default: $STEPTHREAD_DATA_DIR or ./.stepthread)')
    .option('--stack <name>', STACK_OPTION_HELP)
    .option('--no-cache', NO_CACHE_OPTION_HELP)
    .action(async (ref: string | undefined, options: PendingOptions) => {
      setExit(await runPending(ref, options, io));
    });
}
