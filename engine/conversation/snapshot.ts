/**
 * Snapshot and restore of conversation state. A snapshot is the index state and log pointer only,
 * never messages, so its size does not depend on conversation length (one contiguous run is one
 * pair of numbers). Restore is the trust boundary for state coming back from storage or another
 * thread (join restores the main path's snapshot), so it checks shape and consistency.
 */
import * as z from 'zod';
import { StepthreadError } from '../errors.ts';
import { isNormalised, runsProblem } from './runs.ts';
import type { ConversationState, Run } from './types.ts';

const count = z.number().int().nonnegative();
const runSchema = z.tuple([count, count]);
const runsSchema = z.array(runSchema);

/** Shape of a ConversationState (consistency is checked by restoreConversation). */
export const conversationStateSchema = z.object({
  /** Ignored by restore, which takes the thread id as an argument. */
  threadId: z.string().optional(),
  log: z.object({ id: z.string().min(1), length: count }),
  index: z.object({
    visible: runsSchema,
    batches: z.array(z.object({ boundary: count, visibleBefore: runsSchema })).min(1),
    currentBatch: count,
  }),
  tokenUsage: z.object({
    promptTokens: count,
    completionTokens: count,
    totalTokens: count,
    limit: z.number().int().positive().optional(),
    warningThreshold: z.number().gt(0).lte(1).optional(),
  }),
  toolDescription: count.optional(),
  replaced: z.array(z.tuple([count, count])).optional(),
});

/** A deep copy of the state: plain data, no messages, cheap however long the conversation. */
export function snapshotConversation(state: ConversationState): ConversationState {
  const copyRuns = (runs: readonly Run[]): Run[] => runs.map(([start, end]): Run => [start, end]);
  return {
    threadId: state.threadId,
    log: { id: state.log.id, length: state.log.length },
    index: {
      visible: copyRuns(state.index.visible),
      batches: state.index.batches.map((b) => ({
        boundary: b.boundary,
        visibleBefore: copyRuns(b.visibleBefore),
      })),
      currentBatch: state.index.currentBatch,
    },
    tokenUsage: { ...state.tokenUsage },
    ...(state.toolDescription !== undefined ? { toolDescription: state.toolDescription } : {}),
    ...(state.replaced !== undefined
      ? { replaced: state.replaced.map(([original, replacement]) => [original, replacement] as const) }
      : {}),
  };
}

/** Why a well-shaped state is inconsistent, or undefined when it is restorable. */
function consistencyProblem(state: ConversationState): string | undefined {
  const { log, index, tokenUsage } = state;
  const visible = runsProblem(index.visible, log.length);
  if (visible !== undefined) return `visible: ${visible}`;
  if (!isNormalised(index.visible)) return 'visible runs are not normalised';
  if (index.currentBatch !== index.batches.length - 1) {
    return `currentBatch ${index.currentBatch} is not the last of ${index.batches.length} batches`;
  }
  let previousBoundary = 0;
  for (const [i, batch] of index.batches.entries()) {
    if (i === 0 && (batch.boundary !== 0 || batch.visibleBefore.length !== 0)) {
      return 'batch 0 must be the initial batch (boundary 0, nothing visible before)';
    }
    if (batch.boundary < previousBoundary || batch.boundary > log.length) {
      return `batch ${i} boundary ${batch.boundary} is out of order or past the log`;
    }
    const before = runsProblem(batch.visibleBefore, batch.boundary);
    if (before !== undefined) return `batch ${i}: ${before}`;
    previousBoundary = batch.boundary;
  }
  if (tokenUsage.totalTokens !== tokenUsage.promptTokens + tokenUsage.completionTokens) {
    return 'totalTokens is not promptTokens + completionTokens';
  }
  if (state.toolDescription !== undefined && state.toolDescription >= log.length) {
    return `toolDescription ${state.toolDescription} is past the log length ${log.length}`;
  }
  for (const [original, replacement] of state.replaced ?? []) {
    if (!(original < replacement && replacement < log.length)) {
      return `replacement [${original}, ${replacement}] does not point forward inside the log`;
    }
  }
  return undefined;
}

/**
 * Restores a snapshot for thread `threadId` (a join restores the main path child's snapshot into
 * the parent). Throws CONVERSATION_MANAGER_MERGE_FAILED when the snapshot is malformed or
 * inconsistent: runs outside the log, shown twice, or batch records that could not have been made.
 */
export function restoreConversation(snapshot: unknown, threadId: string): ConversationState {
  const parsed = conversationStateSchema.safeParse(snapshot);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const where = issue ? `${issue.path.join('.') || 'snapshot'}: ${issue.message}` : 'invalid';
    throw new StepthreadError(
      'CONVERSATION_MANAGER_MERGE_FAILED',
      `conversation snapshot is malformed (${where})`,
    );
  }
  const restored = snapshotConversation({ ...parsed.data, threadId });
  const problem = consistencyProblem(restored);
  if (problem !== undefined) {
    throw new StepthreadError(
      'CONVERSATION_MANAGER_MERGE_FAILED',
      `conversation snapshot is inconsistent: ${problem}`,
    );
  }
  return restored;
}
