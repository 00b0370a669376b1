/**
 * Token accounting across the model calls of one LLM request, for the tool loop's `onUsage`:
 * records each call's usage on the conversation state, keeps the TOKEN_LIMIT_WARNING /
 * TOKEN_LIMIT_EXCEEDED events, and applies the node's `onTokenLimit` (default `fail`) the moment
 * the limit is passed, so no further tool or model call is paid for.
 */
import {
  type ConversationState,
  recordTokenUsage,
  type TokenCounts,
  type TokenLimitEvent,
  withTokenLimit,
} from '../../engine/conversation/index.ts';
import { StepthreadError } from '../../engine/errors.ts';

export type OnTokenLimit = 'fail' | 'continue';

export interface TokenLimitRecord {
  readonly type: TokenLimitEvent;
  readonly totalTokens: number;
  readonly limit: number;
}

export interface TokenBudgetSettings {
  /** The profile's tokenLimit; undefined keeps the conversation's own. */
  readonly tokenLimit?: number | undefined;
  readonly onTokenLimit?: OnTokenLimit | undefined;
  readonly nodeId: string;
}

export class TokenBudget {
  #state: ConversationState;
  readonly #events: TokenLimitRecord[] = [];
  readonly #settings: TokenBudgetSettings;

  constructor(state: ConversationState, settings: TokenBudgetSettings) {
    const { tokenLimit } = settings;
    this.#state =
      tokenLimit !== undefined && state.tokenUsage.limit !== tokenLimit
        ? withTokenLimit(state, { tokenLimit })
        : state;
    this.#settings = settings;
  }

  /** The conversation state with every recorded call's usage. */
  get state(): ConversationState {
    return this.#state;
  }

  /** Limit events so far, in order; still readable after `record` threw. */
  get events(): readonly TokenLimitRecord[] {
    return this.#events;
  }

  /** Records one model call; throws TOKEN_LIMIT_EXCEEDED when over the limit and onTokenLimit is `fail`. */
  readonly record = (usage: TokenCounts): void => {
    const recorded = recordTokenUsage(this.#state, usage);
    this.#state = recorded.state;
    const { totalTokens, limit } = recorded.state.tokenUsage;
    for (const type of recorded.events) this.#events.push({ type, totalTokens, limit: limit ?? 0 });
    if (
      recorded.events.includes('TOKEN_LIMIT_EXCEEDED') &&
      (this.#settings.onTokenLimit ?? 'fail') === 'fail'
    ) {
      const { nodeId } = this.#settings;
      throw new StepthreadError(
        'TOKEN_LIMIT_EXCEEDED',
        `node ${nodeId}: ${totalTokens} tokens used, over the limit of ${limit}`,
        { nodeId },
      );
    }
  };
}
