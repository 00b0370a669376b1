/**
 * Where a deployed stack's LLM Lambda publishes the replies it streams, and what it publishes: one
 * AppSync Events channel per execution, `/<namespace>/<segment>`, and JSON events the subscribers
 * (`stepthread watch`, `dev --target aws`) read. Shared by the publisher (functions/) and the CLI,
 * so both name the same channel.
 */
import { createHash } from 'node:crypto';

/** The channel namespace the stack creates (infra/streaming.ts). */
export const REPLY_NAMESPACE = 'replies';

/** Environment of the LLM function: the Events API's HTTP domain (or a base URL) and the namespace. */
export const EVENTS_HTTP_ENV = 'STEPTHREAD_EVENTS_HTTP';
export const EVENTS_NAMESPACE_ENV = 'STEPTHREAD_EVENTS_NAMESPACE';

/**
 * The channel segment of an execution. AppSync allows only letters, digits and dashes in a segment,
 * at most 50 characters, and an execution ARN has colons and may be 200 characters long: the segment
 * is a digest of the id (40 hex digits: collisions are out of reach), the same for every publisher
 * and subscriber.
 */
export function executionSegment(executionId: string): string {
  return `x-${createHash('sha256').update(executionId).digest('hex').slice(0, 40)}`;
}

export function replyChannel(namespace: string, executionId: string): string {
  return `/${namespace}/${executionSegment(executionId)}`;
}

/** Where the text belongs: the execution, thread, node and step it streams in. */
interface ReplyPlace {
  readonly executionId: string;
  readonly threadId: string;
  readonly nodeId: string;
  readonly step: number;
}

/** Text of one reply of a node's request (several deltas joined), as published. */
export interface ReplyTextEvent extends ReplyPlace {
  readonly kind: 'text';
  /** Which reply of the node's request (0 first; a round of tool calls starts the next one). */
  readonly reply: number;
  /** The reply begins here: the text before for it, and for any later reply, is void (a retry). */
  readonly restart: boolean;
  readonly text: string;
}

/** The node's request ended (its step commits or fails next): nothing more streams for it. */
export interface ReplyEndEvent extends ReplyPlace {
  readonly kind: 'end';
}

export type ReplyEvent = ReplyTextEvent | ReplyEndEvent;

/** A published event read back; undefined for anything that is not one of ours. */
export function parseReplyEvent(value: unknown): ReplyEvent | undefined {
  if (value === null || typeof value !== 'object') return undefined;
  const v = value as Record<string, unknown>;
  const placed =
    typeof v.executionId === 'string' &&
    typeof v.threadId === 'string' &&
    typeof v.nodeId === 'string' &&
    typeof v.step === 'number';
  if (!placed) return undefined;
  if (v.kind === 'end') return v as unknown as ReplyEndEvent;
  if (v.kind === 'text' && typeof v.text === 'string' && typeof v.reply === 'number') {
    return { ...(v as unknown as ReplyTextEvent), restart: v.restart === true };
  }
  return undefined;
}
