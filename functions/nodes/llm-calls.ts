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

/**
 * The parent's counts after a JOIN: its own, plus the calls each joined branch made (every branch
 * started from the parent's counts). A fork inside a loop then goes on counting across iterations:
 * the n-th call of a node, whichever iteration's branch makes it, gets the scripted provider's n-th
 * reply. Undefined when no branch called a model.
 */
export function joinedCalls(
  parent: Pick<Thread, 'contextData'>,
  branches: readonly Pick<Thread, 'contextData'>[],
): LlmCallCounts | undefined {
  const base = llmCallsOf(parent);
  let total = base.total;
  const byNode: Record<string, number> = { ...base.byNode };
  for (const branch of branches) {
    const calls = llmCallsOf(branch);
    total += Math.max(0, calls.total - base.total);
    for (const [nodeId, count] of Object.entries(calls.byNode)) {
      const made = count - (base.byNode[nodeId] ?? 0);
      if (made > 0) byNode[nodeId] = (byNode[nodeId] ?? 0) + made;
    }
  }
  return total === base.total ? undefined : { total, byNode };
}
