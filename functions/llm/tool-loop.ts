/**
 * The tool-call loop of one LLM request: call the model; while it asks for tools, run them and
 * send the results back; stop at a reply without tool calls. Pure of storage: the caller gives the
 * visible conversation and gets back the messages to append, in order.
 *
 * Limits:
 * - `maxToolCalls` bounds the tool calls run in one request (parallel calls in one reply count
 *   one each). A reply that would go past it fails the request with TOOL_CALL_LIMIT_EXCEEDED and
 *   none of its calls run: a half-answered batch is not a valid conversation for either API, and
 *   silently dropping calls would hide a runaway agent. Raise the limit to allow more.
 * - Token limits are the caller's: `onUsage` sees every model call's usage as it happens and may
 *   throw (e.g. TOKEN_LIMIT_EXCEEDED) to stop the loop before any tool of that reply runs.
 *
 * A tool's failure (unknown tool, arguments that are not a JSON object, a thrown error, `ok:
 * false`) becomes a tool-result message the model reads, never a crash. Two things end the loop from
 * inside a tool: an abort of `signal`, and an outcome with `failsRequest` (a tool whose definition is
 * broken: no reply of the model can mend it, and a run that went on without the tool would hide it).
 */
import { estimateTokens, type TokenCounts } from '../../engine/conversation/index.ts';
import { StepthreadError } from '../../engine/errors.ts';
import type { Message, ToolCall } from '../../engine/model/schema.ts';
import {
  countCall,
  type LlmCallCounts,
  type LlmProvider,
  NO_CALLS,
  type ReplyStream,
  type ToolSpecs,
} from './provider.ts';

/** Used when the node sets no maxToolCallsPerRequest. */
export const DEFAULT_MAX_TOOL_CALLS = 10;

/** What running a tool gave: its output (`ok`), or what went wrong, for the model to read. */
export interface ToolOutcome {
  readonly ok: boolean;
  /** A string is sent as is; anything else as JSON. */
  readonly content: unknown;
  /** Fails the request with this error instead of showing the model the failure. */
  readonly failsRequest?: StepthreadError;
}

export interface ToolCallContext {
  /** The model's id for the call (unique within the request). */
  readonly callId: string;
  readonly signal?: AbortSignal;
}

export type ExecuteTool = (
  name: string,
  args: Record<string, unknown>,
  context: ToolCallContext,
) => Promise<ToolOutcome>;

export interface ToolLoopInput {
  readonly provider: LlmProvider;
  readonly nodeId: string;
  /** The visible conversation, ending with the prompt. */
  readonly messages: readonly Message[];
  readonly tools?: ToolSpecs;
  readonly executeTool: ExecuteTool;
  /** Default DEFAULT_MAX_TOOL_CALLS; 0 allows none. */
  readonly maxToolCalls?: number;
  /** Node parameters (the provider adds its profile's under them). */
  readonly parameters?: Record<string, unknown>;
  /** The thread's LLM call counts before this request (scripted replies depend on them). */
  readonly calls?: LlmCallCounts;
  /**
   * Whether to count this node's calls on their own (a scripted profile with a script for the node
   * reads them). Off otherwise, so the counts stay as small as the set of scripted nodes.
   */
  readonly countPerNode?: boolean;
  readonly signal?: AbortSignal;
  /** Each model call's usage (reported, or estimated when the provider reports none). May throw to stop. */
  readonly onUsage?: (usage: TokenCounts, modelCall: number) => void | Promise<void>;
  /** Someone watches the replies as they stream: each piece of their text (see ReplyText). */
  readonly onReplyText?: (piece: ReplyText) => void;
  /**
   * Whether a call of a known tool, with object arguments, waits for a person before it runs (the
   * tool's `requiresApproval`). The loop then stops with ApprovalNeeded, holding where it was.
   */
  readonly needsApproval?: (name: string, args: Record<string, unknown>) => boolean;
  /** Goes on from where a request stopped for an approval, with the person's decision on that call. */
  readonly resume?: { readonly state: ToolLoopState; readonly decision: ApprovalDecision };
}

/** A person's decision on one tool call held for approval. */
export type ApprovalDecision =
  | { readonly approved: true }
  | { readonly approved: false; readonly reason?: string };

/**
 * Where a request stopped for an approval (plain JSON, stored until the answer comes): everything
 * appended so far — the reply holding the call last but for the results of the calls before it — so
 * the model is not asked that turn again.
 */
export interface ToolLoopState {
  readonly appended: readonly Message[];
  readonly calls: LlmCallCounts;
  readonly usage: TokenCounts;
  /** Each model call's usage, in order (a resumed request records them again on its budget). */
  readonly usages: readonly TokenCounts[];
  /** Tool calls run before the held call's reply. */
  readonly toolCallCount: number;
  readonly failedToolCallCount: number;
  /** The model call whose reply holds the call. */
  readonly modelCall: number;
  /** The held call's index among that reply's tool calls. */
  readonly nextCall: number;
  /** The tools run so far in the request, by name (for a failure's summary). */
  readonly ran: readonly string[];
}

/**
 * The loop stopped before a call that waits for approval. Not a StepthreadError: the step is left
 * uncommitted (nothing of it stored on the thread) until the answer comes.
 */
export class ApprovalNeeded extends Error {
  readonly state: ToolLoopState;
  readonly call: ToolCall;
  constructor(state: ToolLoopState, call: ToolCall) {
    super(`tool call ${call.id} (${call.name}) waits for approval`);
    this.name = 'ApprovalNeeded';
    this.state = state;
    this.call = call;
  }
}

/** What the model reads instead of a result when a person rejected the call: the tool did not run. */
export function refusalContent(name: string, reason: string | undefined): string {
  return `Rejected: a person did not approve this call of ${name}, so the tool did not run.${reason ? ` Reason: ${reason}` : ''}`;
}

/** A piece of a reply's text as it streams, before the request ends. */
export interface ReplyText {
  /** Which model call of the request the reply answers (0 first; each round of tool calls adds one). */
  readonly reply: number;
  /**
   * The reply begins here: the text given before for this reply, and for any later one, is void (a
   * retried attempt starts over). `text` is its first piece, possibly empty.
   */
  readonly restart: boolean;
  readonly text: string;
}

/** The stream of model call `reply`: its first piece, and any after a retry, say the reply begins. */
function replyStream(reply: number, onReplyText: (piece: ReplyText) => void): ReplyStream {
  let begins = true;
  return {
    text(text) {
      if (text === '') return;
      onReplyText({ reply, restart: begins, text });
      begins = false;
    },
    restart() {
      onReplyText({ reply, restart: true, text: '' });
      begins = false;
    },
  };
}

export interface ToolLoopResult {
  /** In order: each assistant reply, each followed by the results of its tool calls; the last is the final reply. */
  readonly appended: Message[];
  /** Summed over the model calls. */
  readonly usage: TokenCounts;
  readonly toolCallCount: number;
  /** The tool calls whose result told the model of an error. */
  readonly failedToolCallCount: number;
  readonly modelCallCount: number;
  /** The final reply's text. */
  readonly finalText: string;
  /** The thread's call counts after this request. */
  readonly calls: LlmCallCounts;
}

export async function runToolLoop(input: ToolLoopInput): Promise<ToolLoopResult> {
  const ran: string[] = [];
  try {
    return await toolLoop(input, ran);
  } catch (error) {
    // The failed node keeps none of the turn, but tools may have acted: say which ran.
    if (!(error instanceof StepthreadError) || ran.length === 0) throw error;
    const counts = new Map<string, number>();
    for (const name of ran) counts.set(name, (counts.get(name) ?? 0) + 1);
    const summary = [...counts].map(([name, count]) => (count === 1 ? name : `${name} ×${count}`)).join(', ');
    throw new StepthreadError(
      error.code,
      `${error.message} (after ${ran.length} tool call(s) of this request ran: ${summary}; what they did stands, the node's turn is not kept)`,
      { ...(error.nodeId === undefined ? {} : { nodeId: error.nodeId }), cause: error },
    );
  }
}

async function toolLoop(input: ToolLoopInput, ran: string[]): Promise<ToolLoopResult> {
  const { provider, nodeId, signal } = input;
  const tools = input.tools ?? {};
  const offered = Object.keys(tools).length > 0;
  const maxToolCalls = input.maxToolCalls ?? DEFAULT_MAX_TOOL_CALLS;
  const held = input.resume?.state;
  const transcript: Message[] = [...input.messages, ...(held?.appended ?? [])];
  const appended: Message[] = [...(held?.appended ?? [])];
  let calls = held?.calls ?? input.calls ?? NO_CALLS;
  let usage: TokenCounts = held?.usage ?? { promptTokens: 0, completionTokens: 0 };
  const usages: TokenCounts[] = [...(held?.usages ?? [])];
  let toolCallCount = held?.toolCallCount ?? 0;
  let failedToolCallCount = held?.failedToolCallCount ?? 0;
  if (held) ran.push(...held.ran);

  /** Runs the reply's calls from `from`, in the model's order; `decision` is the person's on call `from`. */
  const runCalls = async (
    modelCall: number,
    requested: readonly ToolCall[],
    from: number,
    decision?: ApprovalDecision,
  ): Promise<void> => {
    // One at a time, in the model's order: deterministic, and tools with side effects never race.
    for (let index = from; index < requested.length; index++) {
      const call = requested[index]!;
      const decided = index === from ? decision : undefined;
      if (decided === undefined && holdsFor(call, tools, input.needsApproval)) {
        throw new ApprovalNeeded(
          {
            appended: [...appended],
            calls,
            usage,
            usages: [...usages],
            toolCallCount,
            failedToolCallCount,
            modelCall,
            nextCall: index,
            ran: [...ran],
          },
          call,
        );
      }
      const { message: result, ok } =
        decided?.approved === false
          ? {
              message: {
                role: 'tool',
                content: refusalContent(call.name, decided.reason),
                toolCallId: call.id,
                name: call.name,
              } satisfies Message,
              ok: true,
            }
          : await runToolCall(call, tools, input.executeTool, signal);
      if (Object.hasOwn(tools, call.name) && decided?.approved !== false) ran.push(call.name);
      if (!ok) failedToolCallCount++;
      transcript.push(result);
      appended.push(result);
    }
    toolCallCount += requested.length;
  };

  let modelCall = 0;
  if (held) {
    // The reply that holds the call, followed by the results of the calls before it.
    const reply = appended[appended.length - 1 - held.nextCall];
    await runCalls(held.modelCall, reply?.toolCalls ?? [], held.nextCall, input.resume!.decision);
    modelCall = held.modelCall + 1;
  }

  for (; ; modelCall++) {
    signal?.throwIfAborted();
    const response = await provider.complete({
      nodeId,
      messages: transcript,
      calls,
      ...(input.parameters ? { parameters: input.parameters } : {}),
      ...(offered ? { tools } : {}),
      ...(signal ? { signal } : {}),
      ...(input.onReplyText ? { stream: replyStream(modelCall, input.onReplyText) } : {}),
    });
    const reply = withUniqueCallIds({ ...response.message, role: 'assistant' }, `${nodeId}_${calls.total}`);
    calls = countCall(calls, nodeId, input.countPerNode ?? true);
    const used = response.usage ?? {
      promptTokens: estimateTokens(transcript),
      completionTokens: estimateTokens([reply]),
    };
    usage = {
      promptTokens: usage.promptTokens + used.promptTokens,
      completionTokens: usage.completionTokens + used.completionTokens,
    };
    usages.push(used);
    await input.onUsage?.(used, modelCall);
    transcript.push(reply);
    appended.push(reply);

    const requested = reply.toolCalls ?? [];
    if (requested.length === 0) {
      return {
        appended,
        usage,
        toolCallCount,
        failedToolCallCount,
        modelCallCount: modelCall + 1,
        finalText: reply.content,
        calls,
      };
    }
    if (toolCallCount + requested.length > maxToolCalls) {
      throw new StepthreadError(
        'TOOL_CALL_LIMIT_EXCEEDED',
        `node ${nodeId}: the model asked for ${requested.length} more tool call(s) after ${toolCallCount}, ` +
          `over maxToolCallsPerRequest (${maxToolCalls})`,
        { nodeId },
      );
    }
    await runCalls(modelCall, requested, 0);
  }
}

/** Whether a call waits for approval: only a call that could run (a known tool, object arguments). */
function holdsFor(call: ToolCall, tools: ToolSpecs, needsApproval: ToolLoopInput['needsApproval']): boolean {
  if (needsApproval === undefined || !Object.hasOwn(tools, call.name)) return false;
  const args = call.arguments;
  if (typeof args !== 'object' || args === null || Array.isArray(args)) return false;
  return needsApproval(call.name, args as Record<string, unknown>);
}

/** A tool call's result message, and whether it is no error; failures are reported to the model, not thrown. */
async function runToolCall(
  call: ToolCall,
  tools: ToolSpecs,
  executeTool: ExecuteTool,
  signal: AbortSignal | undefined,
): Promise<{ message: Message; ok: boolean }> {
  const result = (content: string, ok = false) => ({
    message: { role: 'tool', content, toolCallId: call.id, name: call.name } satisfies Message,
    ok,
  });
  if (!Object.hasOwn(tools, call.name)) {
    const available = Object.keys(tools);
    return result(
      `Error: there is no tool named "${call.name}"` +
        (available.length > 0 ? `; the tools are: ${available.join(', ')}` : '; no tools are available'),
    );
  }
  const args = call.arguments;
  if (typeof args !== 'object' || args === null || Array.isArray(args)) {
    return result(`Error: the arguments must be a JSON object, got: ${preview(args)}`);
  }
  let outcome: ToolOutcome;
  try {
    outcome = await executeTool(call.name, args as Record<string, unknown>, {
      callId: call.id,
      ...(signal ? { signal } : {}),
    });
  } catch (error) {
    if (signal?.aborted) throw signal.reason ?? error;
    const code = error instanceof StepthreadError ? `${error.code}: ` : '';
    return result(`Error: ${code}${error instanceof Error ? error.message : String(error)}`);
  }
  if (outcome.failsRequest) throw outcome.failsRequest;
  const text =
    typeof outcome.content === 'string' ? outcome.content : (JSON.stringify(outcome.content) ?? 'null');
  return outcome.ok ? result(text, true) : result(`Error: ${text}`);
}

function preview(value: unknown): string {
  const text = typeof value === 'string' ? value : (JSON.stringify(value) ?? String(value));
  return text.length > 200 ? `${text.slice(0, 200)}…` : text;
}

/**
 * Some OpenAI-compatible servers send empty or repeated call ids; results are matched to calls by
 * id, so those get `<prefix>_<i>` (deterministic: prefix is node and thread call count).
 */
export function withUniqueCallIds(message: Message, prefix: string): Message {
  if (!message.toolCalls?.length) return message;
  const seen = new Set<string>();
  const toolCalls = message.toolCalls.map((call, i) => {
    const id = call.id !== '' && !seen.has(call.id) ? call.id : `${prefix}_${i}`;
    seen.add(id);
    return id === call.id ? call : { ...call, id };
  });
  return { ...message, toolCalls };
}
