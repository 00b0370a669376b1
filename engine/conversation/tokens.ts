/** Token accounting for a conversation: usage totals, limit, and the warning/exceeded events. */
import { StepthreadError } from '../errors.ts';
import type { Message } from '../model/schema.ts';
import type { ConversationState, TokenUsage } from './types.ts';

export const DEFAULT_WARNING_THRESHOLD = 0.8;

export type TokenLimitEvent = 'TOKEN_LIMIT_WARNING' | 'TOKEN_LIMIT_EXCEEDED';

export interface TokenCounts {
  readonly promptTokens: number;
  readonly completionTokens: number;
}

export interface TokenLimitSettings {
  /** Hard limit on total tokens; undefined removes the limit. */
  readonly tokenLimit?: number | undefined;
  /** Fraction of the limit at which a warning is raised (0 < t <= 1, default 0.8). */
  readonly warningThreshold?: number | undefined;
}

function assertCount(name: string, value: number): void {
  if (!Number.isSafeInteger(value) || value < 0) {
    throw new StepthreadError('INVALID_TOKEN_USAGE', `${name} must be a non-negative integer, got ${value}`);
  }
}

/** Checks limit settings; throws INVALID_TOKEN_USAGE on a non-positive limit or a threshold outside (0, 1]. */
export function assertTokenLimitSettings(settings: TokenLimitSettings): void {
  const { tokenLimit, warningThreshold } = settings;
  if (tokenLimit !== undefined && (!Number.isSafeInteger(tokenLimit) || tokenLimit <= 0)) {
    throw new StepthreadError(
      'INVALID_TOKEN_USAGE',
      `tokenLimit must be a positive integer, got ${tokenLimit}`,
    );
  }
  if (
    warningThreshold !== undefined &&
    (!Number.isFinite(warningThreshold) || warningThreshold <= 0 || warningThreshold > 1)
  ) {
    throw new StepthreadError(
      'INVALID_TOKEN_USAGE',
      `warningThreshold must be in (0, 1], got ${warningThreshold}`,
    );
  }
}

/** Limit fields of a TokenUsage, present only when set (so states compare and serialise cleanly). */
export function limitFields(settings: TokenLimitSettings): Pick<TokenUsage, 'limit' | 'warningThreshold'> {
  return {
    ...(settings.tokenLimit !== undefined ? { limit: settings.tokenLimit } : {}),
    ...(settings.warningThreshold !== undefined ? { warningThreshold: settings.warningThreshold } : {}),
  };
}

/** The state with a new token limit (e.g. the LLM profile's), keeping the usage counted so far. */
export function withTokenLimit(state: ConversationState, settings: TokenLimitSettings): ConversationState {
  assertTokenLimitSettings(settings);
  const { promptTokens, completionTokens, totalTokens } = state.tokenUsage;
  return { ...state, tokenUsage: { promptTokens, completionTokens, totalTokens, ...limitFields(settings) } };
}

function warningLevel(usage: TokenUsage): number | undefined {
  if (usage.limit === undefined) return undefined;
  return usage.limit * (usage.warningThreshold ?? DEFAULT_WARNING_THRESHOLD);
}

/**
 * Adds one LLM call's usage. TOKEN_LIMIT_WARNING is raised by the call whose usage first reaches
 * `warningThreshold * limit` (totals only grow, so that happens once per limit). TOKEN_LIMIT_EXCEEDED
 * is raised by every call that leaves the total above the limit, so a caller that ignored one still
 * sees the next; what to do about it (fail the thread) is the caller's decision.
 */
export function recordTokenUsage(
  state: ConversationState,
  counts: TokenCounts,
): { state: ConversationState; events: TokenLimitEvent[] } {
  assertCount('promptTokens', counts.promptTokens);
  assertCount('completionTokens', counts.completionTokens);
  const before = state.tokenUsage;
  const promptTokens = before.promptTokens + counts.promptTokens;
  const completionTokens = before.completionTokens + counts.completionTokens;
  const after: TokenUsage = {
    ...before,
    promptTokens,
    completionTokens,
    totalTokens: promptTokens + completionTokens,
  };
  const events: TokenLimitEvent[] = [];
  const level = warningLevel(after);
  if (level !== undefined && before.totalTokens < level && after.totalTokens >= level) {
    events.push('TOKEN_LIMIT_WARNING');
  }
  if (after.limit !== undefined && after.totalTokens > after.limit) events.push('TOKEN_LIMIT_EXCEEDED');
  return { state: { ...state, tokenUsage: after }, events };
}

/** Whether the conversation has used more tokens than its limit allows. */
export function isTokenLimitExceeded(state: ConversationState): boolean {
  const { limit, totalTokens } = state.tokenUsage;
  return limit !== undefined && totalTokens > limit;
}

/**
 * A rough token count for messages: about four characters per token (the usual rule of thumb for
 * English text with GPT-style tokenizers). An estimate only, for budgeting before a call; real
 * counts come from the provider's reported usage.
 */
export function estimateTokens(messages: readonly Message[]): number {
  let chars = 0;
  for (const message of messages) {
    chars += message.role.length + message.content.length + (message.name?.length ?? 0);
    for (const call of message.toolCalls ?? []) {
      chars += call.name.length + (JSON.stringify(call.arguments)?.length ?? 0);
    }
  }
  return Math.ceil(chars / 4);
}
