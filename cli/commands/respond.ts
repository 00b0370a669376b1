/**
 * `stepthread respond <interactionId|threadId|executionArn> [--node <id>]
 *   (--approve | --reject | --input <answer> | --select <n> | --fail) [--reason <text>]`:
 * answers a pending USER_INTERACTION of a deployed run. It only reads (the interaction item, by
 * GetItem or Query), checks the answer against the question, and sends it with SendTaskSuccess
 * (`--fail`: SendTaskFailure) using the stored task token; the workflow's `<node>:answer` Task
 * commits it. So an operator needs no table writes and no S3 access. A token is single-use: an
 * interaction answered (or timed out) already is reported as such.
 */
import type { Command } from 'commander';
import { StepthreadError } from '../../engine/errors.ts';
import type { AnswerVariable } from '../../engine/model/interaction-reply.ts';
import type { UserInteractionType } from '../../engine/model/schema.ts';
import { resolveAwsTarget } from '../../functions/aws/clients.ts';
import { type SfnSend, sfnTaskTokenSender } from '../../functions/handlers/task-tokens.ts';
import { commandLine, shellWord } from '../../functions/local/interaction-hints.ts';
import { offerReply } from '../../functions/local/offered-replies.ts';
import { answerFor, type InteractionReply, sendReply } from '../../functions/nodes/user-interaction.ts';
import { createExecutionIndex, type ExecutionIndex } from '../../functions/stores/execution-index.ts';
import {
  answersMatch,
  createInteractionStore,
  type Interaction,
  InteractionConflict,
  type InteractionStore,
  parseInteractionId,
} from '../../functions/stores/interaction-store.ts';
import { inputFromText } from '../answers.ts';
import { type CliIo, EXIT } from '../io.ts';
import {
  commandForm,
  type DataDirOption,
  dataDirArgument,
  NO_CACHE_OPTION_HELP,
  STACK_OPTION_HELP,
  withStores,
} from '../local-session.ts';
import { openInteractions } from './pending.ts';
import { type DeployedServices, deployedSfn } from './start.ts';

export interface RespondOptions extends DataDirOption {
  node?: string;
  approve?: boolean;
  reject?: boolean;
  input?: string;
  select?: string;
  fail?: boolean;
  reason?: string;
  json?: boolean;
}

type ParsedReply =
  | { ok: true; reply: InteractionReply }
  /** `inexact`: an --input number JSON would round, which a `string` variable still takes as text. */
  | { ok: false; message: string; inexact?: true };

/**
 * The reply the flags give; `--input` read as text for the variable the answer is stored in (a
 * `string` variable takes the text itself), when known.
 */
export function replyOf(options: RespondOptions, variable?: AnswerVariable): ParsedReply {
  const given = (['approve', 'reject', 'input', 'select', 'fail'] as const).filter(
    (flag) => options[flag] !== undefined,
  );
  if (given.length !== 1) {
    return {
      ok: false,
      message: 'give exactly one of --approve, --reject, --input <answer>, --select <n>, --fail',
    };
  }
  const reason = options.reason === undefined ? {} : { reason: options.reason };
  if (options.approve) return { ok: true, reply: { kind: 'approve', ...reason } };
  if (options.reject) return { ok: true, reply: { kind: 'reject', ...reason } };
  if (options.fail) return { ok: true, reply: { kind: 'fail', ...reason } };
  if (options.select !== undefined) {
    const choice = /^\d+$/.test(options.select) ? Number(options.select) : options.select;
    return { ok: true, reply: { kind: 'select', choice } };
  }
  // As the terminal's prompt reads it: JSON when it parses, else the text as a string.
  const reply = inputFromText(options.input ?? '', variable);
  return typeof reply === 'string'
    ? { ok: false, message: `INPUT_NUMBER_INEXACT: --input ${reply}`, inexact: true }
    : { ok: true, reply };
}

/** The flags that answer each kind of question that waits for one. */
const ANSWER_FLAGS: Readonly<
  Record<
    Exclude<UserInteractionType, 'show_message'>,
    { kinds: readonly InteractionReply['kind'][]; flags: string }
  >
> = {
  ask_for_approval: { kinds: ['approve', 'reject'], flags: '--approve or --reject' },
  ask_for_input: { kinds: ['input'], flags: '--input <answer>' },
  ask_for_selection: { kinds: ['select'], flags: '--select <n>' },
};

/**
 * INVALID_INTERACTION_ANSWER naming the flags that answer this question, for a flag that answers
 * another kind (`--select` at an approval): the engine's own message names no surface's flags.
 */
function checkReplyFlag(interaction: Interaction, reply: InteractionReply): void {
  const type = interaction.interactionType;
  if (reply.kind === 'fail' || type === 'show_message') return;
  const { kinds, flags } = ANSWER_FLAGS[type];
  if (kinds.includes(reply.kind)) return;
  throw new StepthreadError(
    'INVALID_INTERACTION_ANSWER',
    `node ${interaction.nodeId} (${type}): --${reply.kind} does not answer it; answer with ${flags} (or --fail)`,
    { nodeId: interaction.nodeId },
  );
}

/** The one open interaction a reference names (with --node when it names several). */
export async function findInteraction(
  store: InteractionStore,
  ref: string,
  node?: string,
  executions?: ExecutionIndex,
): Promise<Interaction> {
  const direct = parseInteractionId(ref);
  if (direct) return store.getInteraction(direct.threadId, direct.nodeId);
  const open = (await openInteractions(store, ref, executions)).filter(
    (interaction) => node === undefined || interaction.nodeId === node || interaction.authorNodeId === node,
  );
  const only = open[0];
  if (only !== undefined && open.length === 1) return only;
  if (open.length === 0) {
    throw new StepthreadError(
      'INTERACTION_NOT_FOUND',
      `no pending interaction for ${ref}${node ? ` at node ${node}` : ''}`,
    );
  }
  throw new StepthreadError(
    'INTERACTION_NOT_FOUND',
    `${ref} has ${open.length} pending interactions (${open.map((i) => i.interactionId).join(', ')}): name one, or pass --node`,
  );
}

function describeAnswer(reply: InteractionReply): string {
  switch (reply.kind) {
    case 'approve':
      return 'approved';
    case 'reject':
      return 'rejected';
    case 'fail':
      return 'failed';
    case 'select':
      return `selected ${JSON.stringify(reply.choice)}`;
    case 'input':
      return 'answered';
  }
}

/** What `respond --json` prints. */
export interface RespondJson {
  interactionId: string;
  /** `answered` / `failed`: sent now; `already-answered`: it was, with this very answer. */
  result: 'answered' | 'failed' | 'already-answered';
}

function sameAnswer(interaction: Interaction, reply: InteractionReply): boolean {
  const resolution = interaction.resolution;
  if (resolution === undefined) return false;
  if (reply.kind === 'fail') return resolution.outcome === 'FAILED';
  return answersMatch(resolution, answerFor(interaction, reply));
}

/**
 * For an interaction closed already: 'already-answered' when its recorded answer is this one
 * (respond run twice), else INTERACTION_ALREADY_ANSWERED. Undefined while it is PENDING; a reply
 * that does not fit it is then refused (INVALID_INTERACTION_ANSWER) before it reaches, and fails,
 * the run.
 */
function alreadyClosed(interaction: Interaction, reply: InteractionReply): 'already-answered' | undefined {
  if (interaction.status !== 'PENDING') {
    if (sameAnswer(interaction, reply)) return 'already-answered';
    throw new InteractionConflict(interaction);
  }
  if (reply.kind !== 'fail') answerFor(interaction, reply);
  return undefined;
}

/**
 * Sends the reply for an interaction that is still PENDING; for one already closed, succeeds only
 * when the recorded answer is this one (respond run twice), else INTERACTION_ALREADY_ANSWERED.
 */
export async function deliverReply(
  sfn: SfnSend,
  interaction: Interaction,
  reply: InteractionReply,
): Promise<RespondJson['result']> {
  const closed = alreadyClosed(interaction, reply);
  if (closed !== undefined) return closed;
  try {
    await sendReply(sfnTaskTokenSender(sfn), interaction, reply);
  } catch (error) {
    if (!(error instanceof StepthreadError && error.code === 'INTERACTION_NOT_DELIVERED')) throw error;
    const why = error.cause instanceof Error ? error.cause.name : 'no longer waiting';
    throw new StepthreadError(
      'INTERACTION_ALREADY_ANSWERED',
      `interaction ${interaction.interactionId} was already answered, timed out, or its run ended: Step Functions no longer accepts its task token (${why}); \`stepthread pending\` lists what still waits`,
      { nodeId: interaction.nodeId, cause: error },
    );
  }
  return reply.kind === 'fail' ? 'failed' : 'answered';
}

/**
 * A local run's interaction: the reply goes to the process that waits on it (`run` at its prompt,
 * `dev`) through the data directory's stores (functions/local/offered-replies.ts). When no process
 * takes it, INTERACTION_NOT_DELIVERED says how to answer instead.
 */
async function deliverLocalReply(
  store: InteractionStore,
  interaction: Interaction,
  reply: InteractionReply,
  options: RespondOptions,
  io: CliIo,
): Promise<RespondJson['result']> {
  const closed = alreadyClosed(interaction, reply);
  if (closed !== undefined) return closed;
  await offerReply(store, interaction, reply, resumeHint(interaction, reply, options, io));
  return reply.kind === 'fail' ? 'failed' : 'answered';
}

/** How an interrupted local run's question is answered: resume it with the answer up front. */
export function resumeHint(
  interaction: Interaction,
  reply: InteractionReply,
  options: Pick<RespondOptions, 'dataDir'>,
  io: CliIo,
): string {
  const value = answersValueOf(reply);
  const answers =
    value === undefined ? '' : ` --answers ${shellWord(JSON.stringify({ [interaction.nodeId]: value }))}`;
  const resume = commandLine(
    commandForm(io, dataDirArgument(options)),
    `resume ${interaction.executionId}${answers}`,
  );
  return `resume the run with \`${resume}\` (it asks again, or takes the answer given with --answers)`;
}

/** The reply as an `--answers` file gives it; undefined for a failure, which has none. */
function answersValueOf(reply: InteractionReply): unknown {
  switch (reply.kind) {
    case 'approve':
    case 'reject':
      return reply.reason === undefined
        ? reply.kind === 'approve'
        : { approved: reply.kind === 'approve', reason: reply.reason };
    case 'select':
      return reply.choice;
    case 'input':
      return reply.value;
    case 'fail':
      return undefined;
  }
}

/** `--stack` alone means AWS itself, as openStores reads it: never the local stores' path then. */
function deployedSfnFor(options: RespondOptions, io: CliIo, services: DeployedServices) {
  if (options.stack === undefined) return deployedSfn(io, services);
  const env = io.env ?? process.env;
  const target = resolveAwsTarget(env, { dynamoEndpoint: 'embedded', s3Endpoint: 'embedded' });
  return deployedSfn(
    target.kind === 'embedded' ? { ...io, env: { ...env, STEPTHREAD_TARGET: 'aws' } } : io,
    services,
  );
}

export async function runRespond(
  ref: string,
  options: RespondOptions,
  io: CliIo,
  services: DeployedServices = {},
): Promise<number> {
  const parsed = replyOf(options);
  if (!parsed.ok && !parsed.inexact) {
    io.stderr(`stepthread: ${parsed.message}\n`);
    return EXIT.usage;
  }
  const sfn = deployedSfnFor(options, io, services);
  return withStores(
    { ...options, mustExist: true },
    io,
    (session) => (session ? `cannot answer ${ref}` : 'cannot open the stores'),
    async (session) => {
      const store = createInteractionStore(session.clients);
      const interaction = await findInteraction(
        store,
        ref,
        options.node,
        createExecutionIndex(session.clients),
      );
      // Read again for the answer's variable: into a `string` one, `--input 42` answers "42".
      const read = replyOf(options, interaction.answerVariable);
      if (!read.ok) {
        io.stderr(`stepthread: ${read.message}\n`);
        return EXIT.usage;
      }
      const reply = read.reply;
      checkReplyFlag(interaction, reply);
      const result =
        sfn === undefined
          ? await deliverLocalReply(store, interaction, reply, options, io)
          : await deliverReply(sfn, interaction, reply);
      if (options.json) {
        const json: RespondJson = { interactionId: interaction.interactionId, result };
        io.stdout(`${JSON.stringify(json, null, 2)}\n`);
      } else if (result === 'already-answered') {
        io.stdout(`${interaction.interactionId} was already ${describeAnswer(reply)} (nothing sent)\n`);
      } else {
        const then = result === 'answered' ? 'the run continues' : 'the run fails';
        io.stdout(`${describeAnswer(reply)} ${interaction.interactionId}: ${then}\n`);
      }
      return EXIT.ok;
    },
  );
}

export function registerRespond(
  program: Command,
  io: CliIo,
  setExit: (code: number) => void,
  services: DeployedServices = {},
): void {
  program
    .command('respond')
    .description(
      'answer a USER_INTERACTION a run waits on (see stepthread pending); locally, the run or dev process waiting on it takes the answer',
    )
    .argument('<ref>', 'interaction id (<threadId>/<nodeId>), thread id, or execution id/ARN')
    .option('--node <nodeId>', 'which interaction, when the thread or execution has several')
    .option('--approve', 'approve (ask_for_approval)')
    .option('--reject', 'reject (ask_for_approval): the answer is false and the run continues')
    .option('--input <answer>', 'the answer (ask_for_input): JSON when it parses, else the text as a string')
    .option('--select <n>', 'the option index, from 0, or the option itself (ask_for_selection)')
    .option('--fail', 'fail the run instead of answering (SendTaskFailure)')
    .option('--reason <text>', 'why (kept with --approve / --reject, the failure message with --fail)')
    .option('--json', 'print {"interactionId","result"}')
    .option('--data-dir <dir>', 'local data directory (default: $STEPTHREAD_DATA_DIR or ./.stepthread)')
    .option('--stack <name>', STACK_OPTION_HELP)
    .option('--no-cache', NO_CACHE_OPTION_HELP)
    .action(async (ref: string, options: RespondOptions) => {
      setExit(await runRespond(ref, options, io, services));
    });
}
