/**
 * The LLM provider interface: `scripted` (the offline default), `openai` (any OpenAI-compatible
 * server) and `bedrock` (Converse) all implement it. One `complete` call is one model request;
 * tool calls in the reply are run by the tool loop (tool-loop.ts), not by providers.
 */
import type { Message, Profile } from '../../engine/model/schema.ts';

/** What the model is told about a tool (a workflow ToolDefinition is one). */
export interface ToolSpec {
  readonly description: string;
  /** JSON Schema of the arguments (an object schema); absent = no arguments. */
  readonly parameters?: Readonly<Record<string, unknown>> | undefined;
}

export type ToolSpecs = Readonly<Record<string, ToolSpec>>;

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
  /** Tools the model may call; absent or empty = none. */
  tools?: ToolSpecs;
  calls: LlmCallCounts;
  /** Aborts a call that is no longer wanted (run ended, join decided). */
  signal?: AbortSignal;
  /**
   * Someone watches the reply as it comes (run's progress, dev's console): the provider asks for a
   * streamed reply and hands it each piece of text. The response is the same message either way.
   */
  stream?: ReplyStream;
}

/** Where a streamed reply's text goes as it arrives. */
export interface ReplyStream {
  /** The next piece of the reply's text. */
  text(delta: string): void;
  /** The reply starts over (a retried attempt): the text given so far is void. */
  restart(): void;
}

export interface LlmResponse {
  /** The assistant message to append. */
  message: Message;
  /** Token counts the provider reported; absent = estimate from the messages. */
  usage?: { promptTokens: number; completionTokens: number };
  /** Why the model stopped, as the provider said (`stop`, `length`, `tool_calls`, …), when it did. */
  finishReason?: string;
}

export interface LlmProvider {
  complete(request: LlmRequest): Promise<LlmResponse>;
}

/** Builds the provider for a profile; unknown providers are a coded error. */
export type ProviderFactory = (profile: Profile) => LlmProvider;

/** The counts after one more call from `nodeId`. */
export function countCall(calls: LlmCallCounts, nodeId: string, perNode = true): LlmCallCounts {
  if (!perNode) return { total: calls.total + 1, byNode: calls.byNode };
  return { total: calls.total + 1, byNode: { ...calls.byNode, [nodeId]: (calls.byNode[nodeId] ?? 0) + 1 } };
}
