/**
 * `stepthread dev --target aws`: the replies a deployed execution's LLM nodes stream, from the stack's
 * Events API (cli/deployed/reply-stream.ts), forwarded to the pages as the `token` events local runs
 * give, for each deployed execution the server watches (a run it started, or one a page shows while
 * it runs). The subscription ends when the execution does.
 */
import { StepthreadError } from '../../engine/errors.ts';
import type { AwsTarget } from '../../functions/aws/target.ts';
import { type CredentialSource, credentialsFrom } from '../../functions/events/appsync-signing.ts';
import type { ReplyEvent } from '../../functions/events/reply-channel.ts';
import {
  type ReplyStreamEndpoints,
  replyStreamEndpoints,
  subscribeReplies,
} from '../deployed/reply-stream.ts';
import type { StackNamesOptions } from '../stack-names.ts';
import type { StreamingReplies, TokenEvent } from './streaming-replies.ts';

/** Subscribes to one execution's replies; resolves once subscribed. */
export type ReplyWatch = (
  executionId: string,
  onEvent: (event: ReplyEvent) => void,
) => Promise<{ close(): void }>;

type Env = Readonly<Record<string, string | undefined>>;

export function replyWatchOf(
  endpoints: ReplyStreamEndpoints,
  env: Env,
  credentials: CredentialSource = credentialsFrom(env),
): ReplyWatch {
  return (executionId, onEvent) => subscribeReplies({ endpoints, executionId, credentials, env, onEvent });
}

/**
 * The stack's reply watch, or undefined (with `note` told why) when it streams nowhere: deployed with
 * streaming off, or its outputs unreadable. dev serves the stack either way.
 */
export async function deployedReplyWatch(
  env: Env,
  target: AwsTarget,
  options: StackNamesOptions,
  note: (text: string) => void,
): Promise<ReplyWatch | undefined> {
  try {
    return replyWatchOf(await replyStreamEndpoints(env, target, options), env);
  } catch (error) {
    const reason = error instanceof StepthreadError ? `${error.code}: ${error.message}` : String(error);
    note(`streamed replies are not shown (${reason})\n`);
    return undefined;
  }
}

export interface RemoteReplies {
  /** Starts forwarding an execution's replies (once per execution). */
  follow(executionId: string): void;
  /** Whether an execution's replies are being forwarded. */
  following(executionId: string): boolean;
  /** The execution ended: stop, and forget what streamed. */
  stop(executionId: string): void;
  closeAll(): void;
}

export function createRemoteReplies(
  watch: ReplyWatch | undefined,
  streaming: StreamingReplies,
  onToken: (token: TokenEvent) => void,
): RemoteReplies {
  const subscriptions = new Map<string, Promise<{ close(): void } | undefined>>();
  const received = (event: ReplyEvent) => {
    if (event.kind === 'end') streaming.done(event.executionId, event.threadId, event.nodeId);
    else onToken(streaming.add(event));
  };
  const stop = (executionId: string) => {
    const subscription = subscriptions.get(executionId);
    if (subscription === undefined) return;
    subscriptions.delete(executionId);
    void subscription.then((s) => s?.close());
    streaming.ended(executionId);
  };
  return {
    follow(executionId) {
      if (watch === undefined || subscriptions.has(executionId)) return;
      // A subscription that fails shows no replies; the page still shows the run as it goes.
      subscriptions.set(
        executionId,
        watch(executionId, received).catch(() => undefined),
      );
    },
    following: (executionId) => subscriptions.has(executionId),
    stop,
    closeAll() {
      for (const executionId of [...subscriptions.keys()]) stop(executionId);
    },
  };
}
