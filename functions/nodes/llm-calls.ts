/**
 * Where a thread keeps its LLM call counts. Its own module so FORK (which copies the counts to its
 * children) does not import the LLM node, and with it the providers, into its bundle.
 */
import type { Thread } from '../../engine/thread/types.ts';
import { type LlmCallCounts, NO_CALLS } from '../llm/provider.ts';

/** Where the thread keeps its LLM call counts (see LlmCallCounts). */
export const LLM_CALLS_KEY = 'llmCalls';

export function llmCallsOf(thread: Pick<Thread, 'contextData'>): LlmCallCounts {
  const value = thread.contextData[LLM_CALLS_KEY] as LlmCallCounts | undefined;
  return value ?? NO_CALLS;
}
