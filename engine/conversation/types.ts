/**
 * Conversation state as plain, serialisable data.
 *
 * The message log is append-only and immutable once written, so forks, copies and join-restores
 * share it by pointer: a `LogPointer` names a log (opaque id chosen by the store) and how many of
 * its messages this conversation sees. Everything else here is small index state; its size does
 * not grow with the log when the visible messages form a few contiguous runs.
 */
import type { Message } from '../model/schema.ts';

export type { Message };

/** Half-open run of log positions `[start, end)`, start < end. */
export type Run = readonly [start: number, end: number];

export interface BatchRecord {
  /** Log length when the batch began: messages before it belong to earlier batches. */
  readonly boundary: number;
  /** Visible runs just before this batch began; rollback to the previous batch restores them. */
  readonly visibleBefore: readonly Run[];
}

export interface IndexState {
  /** Visible messages in display order, as runs of ascending log positions. */
  readonly visible: readonly Run[];
  /** batches[0] is the initial batch; context operations that compress start a new one. */
  readonly batches: readonly BatchRecord[];
  readonly currentBatch: number;
}

export interface TokenUsage {
  readonly promptTokens: number;
  readonly completionTokens: number;
  readonly totalTokens: number;
  /** Hard limit on totalTokens; absent means unlimited. */
  readonly limit?: number;
  /** Fraction of `limit` at which a TOKEN_LIMIT_WARNING is raised (default 0.8). */
  readonly warningThreshold?: number;
}

export interface LogPointer {
  /** Opaque log identity assigned by the conversation store (e.g. a content hash of its head segment). */
  readonly id: string;
  /** Number of messages in the log. */
  readonly length: number;
}

/** What a thread holds of its conversation. Snapshot and restore copy this object, never messages. */
export interface ConversationState {
  readonly threadId: string;
  readonly log: LogPointer;
  readonly index: IndexState;
  readonly tokenUsage: TokenUsage;
  /**
   * Log position of the tool-description system message, when one was set. `clear` keeps it
   * visible so the model can still call tools after the conversation is emptied.
   */
  readonly toolDescription?: number;
  /**
   * `[original, replacement]` log positions, one per `replace` (and per change of the tool
   * description), in the order they happened. The seed's replace overwrote the message in the log;
   * ours appends the replacement and keeps the original for sharers, so operations that read the
   * whole log (`clear`) use these pairs to see the log as the seed's would be: each original stands
   * for its latest replacement, and a replacement is not a message of its own.
   */
  readonly replaced?: readonly (readonly [original: number, replacement: number])[];
}
