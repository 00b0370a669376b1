/**
 * The `scripted` provider: deterministic replies for offline runs and tests.
 *
 * `{"provider": "scripted", "responses": [...], "byNode": {"<nodeId>": [...]}, "delayMs": n,
 * "streamChunkMs": n}`.
 * A call from node N returns byNode[N][i], i = N's earlier calls in the thread, while there is one;
 * otherwise responses[j mod len], j = the thread's earlier calls. The counters live in the thread
 * (see LlmCallCounts), so a retried node gets the same reply and a fork child continues from its
 * parent's counts.
 *
 * An entry is a string (the reply's text) or an object `{ "content"?: string, "toolCalls"?:
 * [{ "name", "arguments", "id"? }] }`, a reply that asks for tool calls. Missing call ids are
 * `scripted_<thread call count>_<i>`: deterministic, and unique within the thread.
 *
 * An entry may also follow the prompt: `{ "byPrompt": [{ "contains": "<text>", "reply": <entry> }, ...],
 * "otherwise"?: <entry> }` is the first case whose text the node's prompt (the last user message)
 * contains, else `otherwise`; so a script can answer what the run decided (an approval, a route)
 * without a node per outcome.
 *
 * `streamChunkMs` makes a reply take its time as a model's does: its text comes a word at a time,
 * that many ms apart (watched or not, so a run takes as long either way), each word handed to the
 * request's stream when someone watches. The reply is the same message either way.
 */
import * as z from 'zod';
import { StepthreadError } from '../../engine/errors.ts';
import type { Message } from '../../engine/model/schema.ts';
import { messageSchema } from '../../engine/model/schema.ts';
import type { LlmProvider, LlmRequest, LlmResponse, ReplyStream } from './provider.ts';

export interface ScriptedProfile {
  provider: 'scripted';
  responses?: unknown[];
  byNode?: Record<string, unknown[]>;
  delayMs?: number;
  streamChunkMs?: number;
}

/** The scripted entry a call gets, or undefined when the script has none for it. */
export function pickScriptedResponse(
  profile: ScriptedProfile,
  request: Pick<LlmRequest, 'nodeId' | 'calls'>,
): unknown {
  const own = profile.byNode?.[request.nodeId];
  const i = request.calls.byNode[request.nodeId] ?? 0;
  if (own !== undefined && i < own.length) return own[i];
  const responses = profile.responses ?? [];
  if (responses.length === 0) return undefined;
  return responses[request.calls.total % responses.length];
}

/**
 * A scripted entry as an assistant message: a string is its content, a message object is used as
 * is, and tool calls without ids get `<idPrefix>_<i>`.
 */
export function scriptedMessage(entry: unknown, idPrefix = 'scripted'): Message {
  if (typeof entry === 'string') return { role: 'assistant', content: entry };
  const toolReply = scriptedToolReply(entry, idPrefix);
  if (toolReply !== undefined) return toolReply;
  const parsed = messageSchema.safeParse(
    typeof entry === 'object' && entry !== null ? { role: 'assistant', ...entry } : undefined,
  );
  if (parsed.success) return parsed.data;
  // Anything else (numbers, objects without content) is what the model "said", as JSON.
  return { role: 'assistant', content: JSON.stringify(entry) ?? 'null' };
}

const scriptedToolCallSchema = z.object({
  id: z.string().min(1).optional(),
  name: z.string().min(1),
  arguments: z.unknown().optional(),
});
const scriptedToolReplySchema = z.object({
  content: z.string().optional(),
  toolCalls: z.array(scriptedToolCallSchema).min(1),
});

function scriptedToolReply(entry: unknown, idPrefix: string): Message | undefined {
  const parsed = scriptedToolReplySchema.safeParse(entry);
  if (!parsed.success) return undefined;
  return {
    role: 'assistant',
    content: parsed.data.content ?? '',
    toolCalls: parsed.data.toolCalls.map((call, i) => ({
      id: call.id ?? `${idPrefix}_${i}`,
      name: call.name,
      arguments: call.arguments ?? {},
    })),
  };
}

const byPromptSchema = z.object({
  byPrompt: z.array(z.object({ contains: z.string(), reply: z.unknown() })),
  otherwise: z.unknown().optional(),
});

/**
 * A `byPrompt` entry's reply for these messages (undefined when no case matches and there is no
 * `otherwise`); any other entry as it is.
 */
export function followingPrompt(entry: unknown, messages: readonly Message[]): unknown {
  const parsed = byPromptSchema.safeParse(entry);
  if (!parsed.success) return entry;
  const prompt = messages.findLast((message) => message.role === 'user')?.content ?? '';
  const matched = parsed.data.byPrompt.find((option) => prompt.includes(option.contains));
  return matched ? matched.reply : parsed.data.otherwise;
}

export function abortableDelay(ms: number, signal?: AbortSignal): Promise<void> {
  if (ms <= 0 && !signal?.aborted) return Promise.resolve();
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason ?? new Error('aborted'));
      return;
    }
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason ?? new Error('aborted'));
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

export function createScriptedProvider(profile: ScriptedProfile): LlmProvider {
  return {
    async complete(request): Promise<LlmResponse> {
      await abortableDelay(profile.delayMs ?? 0, request.signal);
      const entry = followingPrompt(pickScriptedResponse(profile, request), request.messages);
      if (entry === undefined) {
        throw new StepthreadError(
          'LLM_PROVIDER_ERROR',
          `the scripted profile has no response for node ${request.nodeId} (no byNode entry left, no responses)`,
          { nodeId: request.nodeId },
        );
      }
      const message = scriptedMessage(entry, `scripted_${request.calls.total}`);
      if (profile.streamChunkMs !== undefined) {
        await streamWords(message.content, profile.streamChunkMs, request.stream, request.signal);
      }
      return { message };
    },
  };
}

/** The text cut after each word, its spaces kept: what `streamChunkMs` sends one piece at a time. */
export function textChunks(text: string): string[] {
  return text.match(/\s*\S+\s*/g) ?? (text === '' ? [] : [text]);
}

async function streamWords(
  text: string,
  chunkMs: number,
  stream: ReplyStream | undefined,
  signal: AbortSignal | undefined,
): Promise<void> {
  for (const [i, chunk] of textChunks(text).entries()) {
    if (i > 0) await abortableDelay(chunkMs, signal);
    stream?.text(chunk);
  }
}
