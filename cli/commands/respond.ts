/**
 * `stepthread respond <interactionId|threadId|executionArn> [--node <id>]
 *   (--approve | --reject | --input <json> | --select <n> | --fail) [--reason <text>]`:
 * answers a pending USER_INTERACTION of a deployed run. The answer is recorded (a conditional
 * update: a second, different answer is refused), applied to the thread as the node's step, and
 * sent with SendTaskSuccess; `--fail` sends SendTaskFailure and the run fails with the reason.
 */
import type { Command } from 'commander';
import { StepthreadError } from '../../engine/errors.ts';
import { createHandlerStores, type HandlerDeps } from '../../functions/handlers/deps.ts';
import { systemEnv } from '../../functions/handlers/lambda.ts';
import { type SfnSend, sfnTaskTokenSender } from '../../functions/handlers/task-tokens.ts';
import { type InteractionReply, respondToInteraction } from '../../functions/nodes/user-interaction.ts';
import {
  type Interaction,
  type InteractionStore,
  parseInteractionId,
} from '../../functions/stores/interaction-store.ts';
import { type CliIo, EXIT } from '../io.ts';
import { codedOf, type DataDirOption, openStores, printErrors } from '../local-session.ts';
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

type ParsedReply = { ok: true; reply: InteractionReply } | { ok: false; message: string };

export function replyOf(options: RespondOptions): ParsedReply {
  const given = (['approve', 'reject', 'input', 'select', 'fail'] as const).filter(
    (flag) => options[flag] !== undefined,
  );
  if (given.length !== 1) {
    return {
      ok: false,
      message: 'give exactly one of --approve, --reject, --input <json>, --select <n>, --fail',
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
  try {
    return { ok: true, reply: { kind: 'input', value: JSON.parse(options.input ?? '') as unknown } };
  } catch (error) {
    return { ok: false, message: `--input is not valid JSON: ${(error as Error).message}` };
  }
}

/** The one open interaction a reference names (with --node when it names several). */
export async function findInteraction(
  store: InteractionStore,
  ref: string,
  node?: string,
): Promise<Interaction> {
  const direct = parseInteractionId(ref);
  if (direct) return store.getInteraction(direct.threadId, direct.nodeId);
  const open = (await openInteractions(store, ref)).filter(
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

export async function runRespond(
  ref: string,
  options: RespondOptions,
  io: CliIo,
  services: DeployedServices = {},
): Promise<number> {
  const parsed = replyOf(options);
  if (!parsed.ok) {
    io.stderr(`stepthread: ${parsed.message}\n`);
    return EXIT.usage;
  }
  const sfn = deployedSfn(io, services);
  if (sfn === undefined) {
    io.stderr(
      'stepthread: nothing on this machine waits for an answer: local runs take answers while they run (in a terminal, or `stepthread run --answers <file>`); to answer a deployed run set AWS_ENDPOINT_URL or STEPTHREAD_TARGET=aws\n',
    );
    return EXIT.usage;
  }
  let session: Awaited<ReturnType<typeof openStores>>;
  try {
    session = await openStores(options, io);
  } catch (error) {
    printErrors(io, 'cannot open the stores', [codedOf(error)]);
    return EXIT.invalid;
  }
  try {
    const deps: HandlerDeps = {
      ...createHandlerStores(session.clients),
      env: systemEnv,
      taskTokens: sfnTaskTokenSender(sfn as SfnSend),
    };
    const interaction = await findInteraction(deps.interactions!, ref, options.node);
    const result = await respondToInteraction(deps, interaction, parsed.reply);
    if (options.json) {
      io.stdout(
        `${JSON.stringify({ interactionId: result.interaction.interactionId, status: result.interaction.status, redelivered: result.redelivered }, null, 2)}\n`,
      );
    } else {
      const again = result.redelivered ? ' (already recorded; delivered again)' : '';
      const then = result.next ? 'the run continues' : 'the run fails';
      io.stdout(`${describeAnswer(parsed.reply)} ${result.interaction.interactionId}${again}: ${then}\n`);
    }
    return EXIT.ok;
  } catch (error) {
    printErrors(io, `cannot answer ${ref}`, [codedOf(error)]);
    return EXIT.invalid;
  } finally {
    await session.close();
  }
}

export function registerRespond(
  program: Command,
  io: CliIo,
  setExit: (code: number) => void,
  services: DeployedServices = {},
): void {
  program
    .command('respond')
    .description('answer a USER_INTERACTION a deployed run waits on (see stepthread pending)')
    .argument('<ref>', 'interaction id (<threadId>/<nodeId>), thread id, or execution id/ARN')
    .option('--node <nodeId>', 'which interaction, when the thread or execution has several')
    .option('--approve', 'approve (ask_for_approval)')
    .option('--reject', 'reject (ask_for_approval): the answer is false and the run continues')
    .option('--input <json>', 'the answer (ask_for_input), as JSON')
    .option('--select <n>', 'the option index, from 0, or the option itself (ask_for_selection)')
    .option('--fail', 'fail the run instead of answering (SendTaskFailure)')
    .option('--reason <text>', 'why (kept with --approve / --reject, the failure message with --fail)')
    .option('--json', 'print {"interactionId","status","redelivered"}')
    .option('--data-dir <dir>', 'local data directory (default: $STEPTHREAD_DATA_DIR or ./.stepthread)')
    .action(async (ref: string, options: RespondOptions) => {
      setExit(await runRespond(ref, options, io, services));
    });
}
