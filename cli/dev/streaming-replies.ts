/**
 * What `stepthread dev` keeps of the LLM replies streaming in its runs, so a page opened (or reloaded)
 * mid-reply shows what has arrived so far: per execution, thread and node, the text of each reply of
 * the node's request, until its step commits (then the conversation has it) or its run ends.
 *
 * Bounded: a reply keeps its last MAX_REPLY_CHARS characters (how many were cut is said), and at most
 * MAX_STREAMING nodes are kept (the oldest go first).
 *
 * Every change is numbered (`seq`, across the server): a token event carries the number of the change
 * it makes, a snapshot the number of the last change it holds, so a page that gets both knows which
 * is newer whatever order they arrive in.
 */
import type { ReplyTextEntry } from '../../functions/handlers/deps.ts';

export const MAX_REPLY_CHARS = 100_000;
export const MAX_STREAMING = 500;

/** A node's reply as it has streamed so far. */
export interface StreamingReply {
  executionId: string;
  threadId: string;
  nodeId: string;
  /** The step the node runs as. */
  step: number;
  /** The text of each reply of the node's request so far (a round of tool calls starts the next one). */
  replies: string[];
  /** Characters cut from the start of the replies (over MAX_REPLY_CHARS), when any were. */
  cutChars?: number;
}

/** A `token` event of /api/events: a piece of a reply. */
export interface TokenEvent {
  executionId: string;
  threadId: string;
  nodeId: string;
  text: string;
  step: number;
  /** Which reply of the node's request. */
  reply: number;
  /** The reply begins here: the text before for it, and for any later reply, is void. */
  restart: boolean;
  /** The number of this change (see the module comment). */
  seq: number;
}

export interface StreamingReplies {
  /** Takes a piece of a reply; gives the token event that tells the pages. */
  add(entry: ReplyTextEntry): TokenEvent;
  /** The node's step committed (or failed): its reply is in the conversation now. */
  done(executionId: string, threadId: string, nodeId: string): void;
  /** The run ended: nothing of it streams any more. */
  ended(executionId: string): void;
  /** What an execution's page shows: its replies in flight, and the number of the last change. */
  snapshot(executionId: string): { seq: number; replies: StreamingReply[] };
}

export function createStreamingReplies(): StreamingReplies {
  const replies = new Map<string, StreamingReply>();
  let seq = 0;
  const keyOf = (executionId: string, threadId: string, nodeId: string) =>
    `${executionId}\u0000${threadId}\u0000${nodeId}`;

  return {
    add(entry) {
      const key = keyOf(entry.executionId, entry.threadId, entry.nodeId);
      let reply = replies.get(key);
      if (reply === undefined || reply.step !== entry.step) {
        reply = {
          executionId: entry.executionId,
          threadId: entry.threadId,
          nodeId: entry.nodeId,
          step: entry.step,
          replies: [],
        };
        replies.delete(key);
        replies.set(key, reply);
        if (replies.size > MAX_STREAMING) replies.delete(replies.keys().next().value!);
      }
      if (entry.restart) {
        reply.replies = reply.replies.slice(0, entry.reply);
        delete reply.cutChars;
      }
      while (reply.replies.length <= entry.reply) reply.replies.push('');
      const text = reply.replies[entry.reply]! + entry.text;
      const cut = Math.max(0, text.length - MAX_REPLY_CHARS);
      reply.replies[entry.reply] = text.slice(cut);
      if (cut > 0) reply.cutChars = (reply.cutChars ?? 0) + cut;
      return {
        executionId: entry.executionId,
        threadId: entry.threadId,
        nodeId: entry.nodeId,
        text: entry.text,
        step: entry.step,
        reply: entry.reply,
        restart: entry.restart,
        seq: ++seq,
      };
    },
    done(executionId, threadId, nodeId) {
      if (replies.delete(keyOf(executionId, threadId, nodeId))) seq++;
    },
    ended(executionId) {
      for (const [key, reply] of replies) {
        if (reply.executionId !== executionId) continue;
        replies.delete(key);
        seq++;
      }
    },
    snapshot(executionId) {
      return {
        seq,
        replies: [...replies.values()]
          .filter((reply) => reply.executionId === executionId)
          .map((reply) => ({ ...reply, replies: [...reply.replies] })),
      };
    },
  };
}
