/**
 * The LLM provider interface. `scripted` is the offline default; `openai` and `bedrock` slot in
 * behind the same interface later.
 */
import type { Message, Profile, ToolDefinition } from '../../engine/model/schema.ts';

/** Calls already made in this thread, kept on the thread so retries and forks replay deterministically. */
export interface LlmCallCounts {
  /** Every call in the thread. */
  total: number;
  /** Calls per node id. */
  byNode: Record<string, number>;
}

export const NO_CALLS: LlmCallCounts = Object.freeze({ total: 0, byNode: Object.freeze({}) });

export interface LlmRequest {
  nodeId: string;
  /** What the model sees, in order. */
  messages: readonly Message[];
  parameters?: Record<string, unknown>;
  tools?: Readonly<Record<string, ToolDefinition>>;
  calls: LlmCallCounts;
  /** Aborts a call that is no longer wanted (run ended, join decided). */
  signal?: AbortSignal;
}

export interface LlmResponse {
  /** The assistant message to append. */
  message: Message;
  /** Token counts the provider reported; absent = estimate from the messages. */
  usage?: { promptTokens: number; completionTokens: number };
}

export interface LlmProvider {
  complete(request: LlmRequest): Promise<LlmResponse>;
}

/** Builds the provider for a profile; unknown providers are a coded error. */
export type ProviderFactory = (profile: Profile) => LlmProvider;

/** The counts after one more call from `nodeId`. */
export function countCall(calls: LlmCallCounts, nodeId: string): LlmCallCounts {
  return { total: calls.total + 1, byNode: { ...calls.byNode, [nodeId]: (calls.byNode[nodeId] ?? 0) + 1 } };
}
