/**
 * The LLM replies streaming in the execution shown, as the page knows them: from the execution page
 * (what came before the page was read) and the `token` events since. Both are numbered by the server
 * (`seq`): a snapshot newer than the tokens seen replaces them, an older one is ignored, and a token
 * the snapshot already holds is skipped, whatever order they arrive in.
 */
import type { StreamingReply, TokenEvent } from './api.ts';

export interface LiveReplies {
  /** The number of the last change this state holds. */
  readonly seq: number;
  /** By thread and node. */
  readonly byNode: Readonly<Record<string, StreamingReply>>;
}

export const NO_REPLIES: LiveReplies = { seq: 0, byNode: {} };

const keyOf = (reply: { threadId: string; nodeId: string }) => `${reply.threadId}\u0000${reply.nodeId}`;

/** The state after a read of the execution page (`undefined`: the run is not in flight here). */
export function withSnapshot(
  current: LiveReplies,
  snapshot: { seq: number; replies: StreamingReply[] } | undefined,
): LiveReplies {
  if (snapshot === undefined) return { seq: current.seq, byNode: {} };
  if (snapshot.seq < current.seq) return current;
  return {
    seq: snapshot.seq,
    byNode: Object.fromEntries(snapshot.replies.map((reply) => [keyOf(reply), reply])),
  };
}

/** The state after a token event. */
export function withToken(current: LiveReplies, token: TokenEvent): LiveReplies {
  if (token.seq <= current.seq) return current;
  const key = keyOf(token);
  const known = current.byNode[key];
  const reply: StreamingReply =
    known && known.step === token.step
      ? { ...known, replies: [...known.replies] }
      : {
          executionId: token.executionId,
          threadId: token.threadId,
          nodeId: token.nodeId,
          step: token.step,
          replies: [],
        };
  if (token.restart) reply.replies = reply.replies.slice(0, token.reply);
  while (reply.replies.length <= token.reply) reply.replies.push('');
  reply.replies[token.reply] += token.text;
  return { seq: token.seq, byNode: { ...current.byNode, [key]: reply } };
}

/** A thread's replies in flight. */
export function repliesOf(state: LiveReplies, threadId: string): StreamingReply[] {
  return Object.values(state.byNode).filter((reply) => reply.threadId === threadId);
}
