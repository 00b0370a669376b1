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
