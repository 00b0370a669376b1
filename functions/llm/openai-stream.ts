/**
 * A streamed chat completion (`stream: true`) put back together: the chunks' content and tool-call
 * deltas, in order, make the completion a non-streamed request would have returned, so the provider
 * reads both the same way and commits the same message. Pure: no I/O.
 *
 * Tool calls come in pieces keyed by their `index`: the id, type and name once (a later one replaces
 * an earlier one, as the OpenAI SDK's own accumulator does), the arguments as text to concatenate.
 * Usage comes in the last chunk (`stream_options.include_usage`), whose `choices` is empty.
 */

/** A piece of one tool call. */
export interface ToolCallDelta {
  readonly index: number;
  readonly id?: string | null;
  readonly type?: string | null;
  readonly function?: { readonly name?: string | null; readonly arguments?: string | null } | null;
}

/** The parts of a chunk read here; anything else a server sends passes unread. */
export interface ChatChunk {
  readonly choices?: readonly {
    readonly index?: number;
    readonly delta?: {
      readonly content?: string | null;
      readonly tool_calls?: readonly ToolCallDelta[] | null;
    } | null;
  }[];
  readonly usage?: { readonly prompt_tokens: number; readonly completion_tokens: number } | null;
}

interface ToolCallParts {
  id: string;
  type: string;
  name: string;
  arguments: string;
}

/** The completion a non-streamed request answers, as far as the provider reads it. */
export interface AssembledCompletion {
  choices: {
    message: {
      content: string | null;
      tool_calls?: { id: string; type: string; function: { name: string; arguments: string } }[];
    };
  }[];
  usage?: { prompt_tokens: number; completion_tokens: number };
}

export class ChatStreamAssembler {
  #content: string | null = null;
  readonly #calls = new Map<number, ToolCallParts>();
  #usage: AssembledCompletion['usage'];
  #choices = false;

  /** Takes one chunk; gives the text it adds to the reply ('' when none). */
  add(chunk: ChatChunk): string {
    if (chunk.usage) {
      this.#usage = {
        prompt_tokens: chunk.usage.prompt_tokens,
        completion_tokens: chunk.usage.completion_tokens,
      };
    }
    let text = '';
    for (const choice of chunk.choices ?? []) {
      // One reply is asked for (n = 1): only the first choice is the reply, as when not streamed.
      if ((choice.index ?? 0) !== 0) continue;
      this.#choices = true;
      const delta = choice.delta ?? {};
      if (typeof delta.content === 'string' && delta.content !== '') {
        this.#content = (this.#content ?? '') + delta.content;
        text += delta.content;
      }
      for (const piece of delta.tool_calls ?? []) this.#addToolCall(piece);
    }
    return text;
  }

  #addToolCall(part: ToolCallDelta): void {
    let call = this.#calls.get(part.index);
    if (call === undefined) {
      call = { id: '', type: 'function', name: '', arguments: '' };
      this.#calls.set(part.index, call);
    }
    if (part.id) call.id = part.id;
    if (part.type) call.type = part.type;
    if (part.function?.name) call.name = part.function.name;
    if (part.function?.arguments) call.arguments += part.function.arguments;
  }

  /** The completion so far (the whole of it once the stream ended). */
  completion(): AssembledCompletion {
    const calls = [...this.#calls.entries()].sort(([a], [b]) => a - b).map(([, call]) => call);
    return {
      // A stream that sent no choice at all is no reply: left empty, the provider says so.
      choices:
        this.#choices || calls.length > 0 || this.#content !== null
          ? [
              {
                message: {
                  content: this.#content,
                  ...(calls.length > 0
                    ? {
                        tool_calls: calls.map((call) => ({
                          id: call.id,
                          type: call.type,
                          function: { name: call.name, arguments: call.arguments },
                        })),
                      }
                    : {}),
                },
              },
            ]
          : [],
      ...(this.#usage ? { usage: this.#usage } : {}),
    };
  }
}
