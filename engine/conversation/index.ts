/** The conversation: message log, index state, context operations, tokens, snapshot/restore. */

export {
  applyContextOperation,
  type ContextOperationResult,
  clearConversation,
  filterConversation,
  insertMessages,
  replaceMessage,
  truncateConversation,
} from './operations.ts';
export {
  concatRuns,
  normaliseRuns,
  positionsOf,
  runsFromPositions,
  runsLength,
  sliceRuns,
} from './runs.ts';
export { conversationStateSchema, restoreConversation, snapshotConversation } from './snapshot.ts';
export {
  type CreateConversationOptions,
  createConversation,
  INITIAL_BATCH,
  rollbackToBatch,
  withLogId,
  withThreadId,
} from './state.ts';
export {
  DEFAULT_WARNING_THRESHOLD,
  estimateTokens,
  isTokenLimitExceeded,
  recordTokenUsage,
  type TokenCounts,
  type TokenLimitEvent,
  type TokenLimitSettings,
  withTokenLimit,
} from './tokens.ts';
export { describeTools, TOOL_DESCRIPTION_HEADING } from './tool-description.ts';
export type {
  BatchRecord,
  ConversationState,
  IndexState,
  LogPointer,
  Message,
  Run,
  TokenUsage,
} from './types.ts';
export { ConversationView, openConversation, setToolDescription } from './view.ts';
