/** Chat-completions response bodies, as an OpenAI-compatible server sends them. */
import type { ScriptedReply } from './scripted-server.ts';

export interface Usage {
  prompt: number;
  completion: number;
}

function completion(message: Record<string, unknown>, finishReason: string, usage?: Usage): ScriptedReply {
  return {
    body: {
      id: 'chatcmpl-test',
      object: 'chat.completion',
      created: 1_700_000_000,
      model: 'test-model',
      choices: [{ index: 0, message: { role: 'assistant', ...message }, finish_reason: finishReason }],
      ...(usage
        ? {
            usage: {
              prompt_tokens: usage.prompt,
              completion_tokens: usage.completion,
              total_tokens: usage.prompt + usage.completion,
            },
          }
        : {}),
    },
  };
}

export function textReply(text: string, usage?: Usage): ScriptedReply {
  return completion({ content: text }, 'stop', usage);
}

/** Tool calls with JSON-string arguments (what the wire carries); `arguments` given as a string is sent verbatim. */
export function toolCallReply(
  calls: { id: string; name: string; arguments: unknown }[],
  usage?: Usage,
  content: string | null = null,
): ScriptedReply {
  return completion(
    {
      content,
      tool_calls: calls.map((call) => ({
        id: call.id,
        type: 'function',
        function: {
          name: call.name,
          arguments: typeof call.arguments === 'string' ? call.arguments : JSON.stringify(call.arguments),
        },
      })),
    },
    'tool_calls',
    usage,
  );
}

export function errorReply(
  status: number,
  message: string,
  options: { headers?: Record<string, string>; code?: string; type?: string } = {},
): ScriptedReply {
  return {
    status,
    ...(options.headers ? { headers: options.headers } : {}),
    body: {
      error: {
        message,
        type: options.type ?? 'invalid_request_error',
        code: options.code ?? null,
        param: null,
      },
    },
  };
}

/** A chat-completion chunk around one delta (what a streamed reply sends, one per event). */
export function chunk(delta: Record<string, unknown>, finishReason: string | null = null): unknown {
  return {
    id: 'chatcmpl-test',
    object: 'chat.completion.chunk',
    created: 1_700_000_000,
    model: 'test-model',
    choices: [{ index: 0, delta, finish_reason: finishReason }],
  };
}

/** The last chunk of a stream asked with `include_usage`: no choices, the usage. */
export function usageChunk(usage: Usage): unknown {
  return {
    id: 'chatcmpl-test',
    object: 'chat.completion.chunk',
    created: 1_700_000_000,
    model: 'test-model',
    choices: [],
    usage: {
      prompt_tokens: usage.prompt,
      completion_tokens: usage.completion,
      total_tokens: usage.prompt + usage.completion,
    },
  };
}

/** Text cut after each word (the spaces kept), as a model streams it. */
export function wordPieces(text: string): string[] {
  return text.match(/\s*\S+\s*/g) ?? (text === '' ? [] : [text]);
}

/**
 * A completion body as a server streams it: the role, the content a word at a time, each tool call's
 * id and name and then its arguments in two pieces, the finish reason, and the usage last.
 */
export function completionChunks(body: unknown): unknown[] {
  const { choices, usage } = body as {
    choices: {
      message: {
        content?: string | null;
        tool_calls?: { id: string; type: string; function: { name: string; arguments: string } }[];
      };
      finish_reason: string;
    }[];
    usage?: { prompt_tokens: number; completion_tokens: number };
  };
  const { message, finish_reason } = choices[0]!;
  const chunks: unknown[] = [chunk({ role: 'assistant', content: '' })];
  for (const piece of wordPieces(message.content ?? '')) chunks.push(chunk({ content: piece }));
  for (const [index, call] of (message.tool_calls ?? []).entries()) {
    const args = call.function.arguments;
    const half = Math.ceil(args.length / 2);
    chunks.push(
      chunk({
        tool_calls: [
          { index, id: call.id, type: call.type, function: { name: call.function.name, arguments: '' } },
        ],
      }),
      chunk({ tool_calls: [{ index, function: { arguments: args.slice(0, half) } }] }),
      chunk({ tool_calls: [{ index, function: { arguments: args.slice(half) } }] }),
    );
  }
  chunks.push(chunk({}, finish_reason));
  if (usage) chunks.push(usageChunk({ prompt: usage.prompt_tokens, completion: usage.completion_tokens }));
  return chunks;
}

/** A streamed reply the server holds before its last word, until `release()`: a model mid-reply. */
export interface HeldReply {
  readonly reply: ScriptedReply;
  /** Lets the server send the rest of the reply. */
  release(): void;
  /** Whether the server has gone on past the hold. */
  lastSent(): boolean;
}

/** `text` streamed word by word, held before its last word (the finish reason and the usage follow it). */
export function heldBeforeLastWord(text: string, usage: Usage): HeldReply {
  const chunks = completionChunks(textReply(text, usage).body);
  const lastWord = chunks.length - 3;
  let release: () => void = () => {};
  const held = new Promise<void>((resolve) => {
    release = resolve;
  });
  let sent = false;
  return {
    reply: {
      stream: chunks,
      beforeChunk: async (index) => {
        if (index !== lastWord) return;
        await held;
        sent = true;
      },
    },
    release: () => release(),
    lastSent: () => sent,
  };
}
