/** Bedrock Converse response bodies and errors, in the JSON shapes the SDK deserialises. */
import type { ScriptedReply } from './scripted-server.ts';

type Block = { text: string } | { toolUse: { toolUseId: string; name: string; input: unknown } };

export function converseReply(
  content: Block[],
  stopReason: 'end_turn' | 'tool_use' | 'max_tokens' = 'end_turn',
  usage = { inputTokens: 10, outputTokens: 5 },
): ScriptedReply {
  return {
    body: {
      output: { message: { role: 'assistant', content } },
      stopReason,
      usage: { ...usage, totalTokens: usage.inputTokens + usage.outputTokens },
      metrics: { latencyMs: 1 },
    },
  };
}

export function converseText(
  text: string,
  usage?: { inputTokens: number; outputTokens: number },
): ScriptedReply {
  return converseReply([{ text }], 'end_turn', usage);
}

export function converseToolUse(
  calls: { toolUseId: string; name: string; input: unknown }[],
  text?: string,
): ScriptedReply {
  return converseReply([...(text ? [{ text }] : []), ...calls.map((toolUse) => ({ toolUse }))], 'tool_use');
}

/** An AWS restJson1 error: the type travels in x-amzn-ErrorType. */
export function converseError(
  status: number,
  type: string,
  message: string,
  headers: Record<string, string> = {},
): ScriptedReply {
  return {
    status,
    headers: { 'x-amzn-errortype': `${type}:http://internal.amazon.com/`, ...headers },
    body: { message },
  };
}
