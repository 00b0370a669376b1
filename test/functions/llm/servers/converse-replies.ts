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

/**
 * A Converse body as ConverseStream sends it: messageStart, each block (text a word at a time, a
 * toolUse's id and name and then its input in two pieces), messageStop, and the usage last.
 */
export function converseEvents(body: unknown): unknown[] {
  const { output, stopReason, usage } = body as {
    output: { message: { content: Block[] } };
    stopReason: string;
    usage?: { inputTokens: number; outputTokens: number; totalTokens: number };
  };
  const events: unknown[] = [{ messageStart: { role: 'assistant' } }];
  for (const [contentBlockIndex, block] of output.message.content.entries()) {
    if ('text' in block) {
      for (const text of block.text.match(/\s*\S+\s*/g) ?? []) {
        events.push({ contentBlockDelta: { contentBlockIndex, delta: { text } } });
      }
    } else {
      const { toolUseId, name, input } = block.toolUse;
      const json = JSON.stringify(input);
      const half = Math.ceil(json.length / 2);
      events.push(
        { contentBlockStart: { contentBlockIndex, start: { toolUse: { toolUseId, name } } } },
        { contentBlockDelta: { contentBlockIndex, delta: { toolUse: { input: json.slice(0, half) } } } },
        { contentBlockDelta: { contentBlockIndex, delta: { toolUse: { input: json.slice(half) } } } },
      );
    }
    events.push({ contentBlockStop: { contentBlockIndex } });
  }
  events.push({ messageStop: { stopReason } });
  if (usage) events.push({ metadata: { usage, metrics: { latencyMs: 1 } } });
  return events;
}
