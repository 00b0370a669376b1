/** Creating conversation states and the small state-to-state transforms (thread id, rollback). */
import { StepthreadError } from '../errors.ts';
import { assertTokenLimitSettings, limitFields } from './tokens.ts';
import type { BatchRecord, ConversationState } from './types.ts';

export interface CreateConversationOptions {
  readonly threadId: string;
  /** Log identity chosen by the conversation store. */
  readonly logId: string;
  readonly tokenLimit?: number | undefined;
  readonly warningThreshold?: number | undefined;
}

/** The initial batch: nothing before it, nothing to roll back to. */
export const INITIAL_BATCH: BatchRecord = { boundary: 0, visibleBefore: [] };

/** An empty conversation over an empty log. */
export function createConversation(options: CreateConversationOptions): ConversationState {
  assertTokenLimitSettings(options);
  return {
    threadId: options.threadId,
    log: { id: options.logId, length: 0 },
    index: { visible: [], batches: [INITIAL_BATCH], currentBatch: 0 },
    tokenUsage: { promptTokens: 0, completionTokens: 0, totalTokens: 0, ...limitFields(options) },
  };
}

/**
 * The same conversation owned by another thread (fork child, copy). The log is shared by pointer
 * and states are immutable, so nothing needs copying; the seed SDK's clone kept the parent's id.
 */
export function withThreadId(state: ConversationState, threadId: string): ConversationState {
  return { ...state, threadId };
}

/**
 * The state pointing at a log the store has just written under a new identity (e.g. after
 * persisting the appended segment). Only the store decides log ids; the length stays as it is.
 */
export function withLogId(state: ConversationState, logId: string): ConversationState {
  return { ...state, log: { id: logId, length: state.log.length } };
}

/**
 * Rolls the visible messages back to how they were when batch `batch` ended, i.e. just before
 * batch `batch + 1` began. Later batch records are dropped. The log is append-only, so messages
 * appended since simply become invisible. Rolling back to the current batch changes nothing.
 */
export function rollbackToBatch(state: ConversationState, batch: number): ConversationState {
  const { index } = state;
  if (!Number.isInteger(batch) || batch < 0 || batch > index.currentBatch) {
    throw new StepthreadError(
      'ROLLBACK_BATCH_NOT_FOUND',
      `batch ${batch} does not exist (batches 0..${index.currentBatch})`,
    );
  }
  if (batch === index.currentBatch) return state;
  const next = index.batches[batch + 1];
  if (next === undefined) {
    throw new StepthreadError('ROLLBACK_BATCH_NOT_FOUND', `batch ${batch + 1} has no record`);
  }
  return {
    ...state,
    index: { visible: next.visibleBefore, batches: index.batches.slice(0, batch + 1), currentBatch: batch },
  };
}
