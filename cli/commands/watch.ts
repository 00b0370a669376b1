/**
 * `stepthread watch <executionArn> [--stack <name>] [--json]`: the replies of a deployed execution's
 * LLM nodes as they stream, on stdout, until the execution ends. They come from the stack's AppSync
 * Events API (cli/deployed/reply-stream.ts), subscribed with the caller's own IAM credentials; the
 * end comes from DescribeExecution, read every few seconds. What is printed is what streamed: the
 * committed replies are in `inspect`.
 */
import { DescribeExecutionCommand } from '@aws-sdk/client-sfn';
import type { Command } from 'commander';
import { StepthreadError } from '../../engine/errors.ts';
import { resolveAwsTarget } from '../../functions/aws/target.ts';
import { type CredentialSource, credentialsFrom } from '../../functions/events/appsync-signing.ts';
import type { ReplyEvent } from '../../functions/events/reply-channel.ts';
import { rootThreadIdFor } from '../../functions/nodes/ids.ts';
import { type ReplySubscription, replyStreamEndpoints, subscribeReplies } from '../deployed/reply-stream.ts';
import { type CliIo, EXIT } from '../io.ts';
import {
  type DataDirOption,
  NO_CACHE_OPTION_HELP,
  printDeployedFailure,
  STACK_OPTION_HELP,
  stackCacheDir,
} from '../local-session.ts';
import { type DeployedServices, deployedSfn, NO_DEPLOYED_STACK, type SfnLike } from './start.ts';

export interface WatchOptions extends DataDirOption {
  json?: boolean;
}

/** What tests replace: the poll interval and the credentials that sign the subscription. */
export interface WatchServices extends DeployedServices {
  readonly pollMs?: number;
  readonly credentials?: CredentialSource;
}

export const WATCH_POLL_MS = 2_000;
/** After the execution ends, events already published may still be on their way. */
const SETTLE_MS = 500;

async function executionStatus(sfn: SfnLike, executionArn: string): Promise<string | undefined> {
  try {
    const described = (await sfn.send(new DescribeExecutionCommand({ executionArn }))) as { status?: string };
    return described.status;
  } catch (error) {
    if (error instanceof Error && error.name === 'ExecutionDoesNotExist') return undefined;
    throw error;
  }
}

/**
 * Prints streamed text as lines per node: `<node>: <text…>`, a new line when another node (or reply,
 * or a retry) speaks, and the line ends when the node's request does. A node of a fork branch or a
 * sub-thread names its thread.
 */
export function replyPrinter(
  executionId: string,
  write: (text: string) => void,
): { print(event: ReplyEvent): void; finish(): void } {
  const root = rootThreadIdFor(executionId);
  let open: string | undefined;
  const label = (event: ReplyEvent) =>
    event.threadId === root ? event.nodeId : `${event.nodeId} [thread ${event.threadId}]`;
  const print = (event: ReplyEvent) => {
    const node = `${event.threadId}\u0000${event.nodeId}\u0000${event.step}`;
    if (event.kind === 'end') {
      if (open?.startsWith(node)) {
        write('\n');
        open = undefined;
      }
      return;
    }
    const place = `${node}\u0000${event.reply}`;
    if (open !== place || event.restart) {
      if (open !== undefined) write('\n');
      write(`${label(event)}${event.restart && event.reply === 0 && open === place ? ' (retried)' : ''}: `);
      open = place;
    }
    write(event.text);
  };
  return {
    print,
    finish() {
      if (open !== undefined) write('\n');
      open = undefined;
    },
  };
}

export async function runWatch(
  executionArn: string,
  options: WatchOptions,
  io: CliIo,
  services: WatchServices = {},
): Promise<number> {
  const env = io.env ?? process.env;
  const sfn = deployedSfn(io, services);
  const target = resolveAwsTarget(env, { dynamoEndpoint: 'embedded', s3Endpoint: 'embedded' });
  if (sfn === undefined || target.kind === 'embedded') {
    io.stderr(`stepthread: ${NO_DEPLOYED_STACK}\n`);
    return EXIT.usage;
  }
  let subscription: ReplySubscription | undefined;
  try {
    const cacheDir = stackCacheDir(options, io);
    const endpoints = await replyStreamEndpoints(env, target, {
      ...(options.stack ? { stack: options.stack } : {}),
      ...(cacheDir ? { cacheDir } : {}),
    });
    const before = await executionStatus(sfn, executionArn);
    if (before === undefined) {
      throw new StepthreadError('EXECUTION_NOT_FOUND', `Step Functions knows no execution ${executionArn}`);
    }
    if (before !== 'RUNNING') {
      io.stderr(`execution ${before}: nothing streams any more (\`stepthread inspect\` shows its replies)\n`);
      return before === 'SUCCEEDED' ? EXIT.ok : EXIT.invalid;
    }
    const printer = options.json
      ? { print: (event: ReplyEvent) => io.stdout(`${JSON.stringify(event)}\n`), finish: () => {} }
      : replyPrinter(executionArn, io.stdout);
    subscription = await subscribeReplies({
      endpoints,
      executionId: executionArn,
      credentials: services.credentials ?? credentialsFrom(env),
      env,
      onEvent: printer.print,
    });
    io.stderr(`watching ${executionArn} (until it ends; Ctrl-C stops watching, not the run)\n`);
    const status = await untilEnded(sfn, executionArn, services.pollMs ?? WATCH_POLL_MS, subscription);
    await new Promise((resolve) => setTimeout(resolve, SETTLE_MS));
    subscription.close();
    printer.finish();
    io.stderr(`execution ${status}\n`);
    return status === 'SUCCEEDED' ? EXIT.ok : EXIT.invalid;
  } catch (error) {
    subscription?.close();
    printDeployedFailure(io, `cannot watch ${executionArn}`, error, env);
    return EXIT.invalid;
  }
}

/** The execution's final status, read every `pollMs`; a broken subscription ends the wait with its error. */
async function untilEnded(
  sfn: SfnLike,
  executionArn: string,
  pollMs: number,
  subscription: ReplySubscription,
): Promise<string> {
  let broken: unknown;
  subscription.ended.catch((error: unknown) => {
    broken = error;
  });
  for (;;) {
    await new Promise((resolve) => setTimeout(resolve, pollMs));
    if (broken !== undefined) throw broken;
    const status = (await executionStatus(sfn, executionArn)) ?? 'RUNNING';
    if (status !== 'RUNNING') return status;
  }
}

export function registerWatch(
  program: Command,
  io: CliIo,
  setExit: (code: number) => void,
  services: DeployedServices = {},
): void {
  program
    .command('watch')
    .description("print a deployed execution's LLM replies as they stream, until it ends")
    .argument('<executionArn>', 'the execution (as `start` prints it)')
    .option('--stack <name>', `${STACK_OPTION_HELP}, and its Events API`)
    .option('--no-cache', NO_CACHE_OPTION_HELP)
    .option('--json', 'one JSON object per line for each published event (text pieces and node ends)')
    .action(async (executionArn: string, options: WatchOptions) => {
      setExit(await runWatch(executionArn, options, io, services));
    });
}
