/**
 * A ConverseStream reply put back together: its content blocks' deltas, by block index, make the
 * message Converse would have returned (text blocks, toolUse blocks with their input parsed), and
 * its metadata event the usage. Pure: no I/O. An exception event in the stream is thrown as the
 * error it is, for the provider to classify like a failed Converse call.
 */
import type {
  ContentBlock,
  Message as ConverseMessage,
  ConverseStreamOutput,
} from '@aws-sdk/client-bedrock-runtime';

type Block = { kind: 'text'; text: string } | { kind: 'toolUse'; id: string; name: string; input: string };

const EXCEPTIONS = [
  'internalServerException',
  'modelStreamErrorException',
  'serviceUnavailableException',
  'throttlingException',
  'validationException',
] as const;

export class ConverseStreamAssembler {
  readonly #blocks = new Map<number, Block>();
  #usage: { inputTokens?: number | undefined; outputTokens?: number | undefined } | undefined;

  /** Takes one event; gives the text it adds to the reply ('' when none). */
  add(event: ConverseStreamOutput): string {
    for (const name of EXCEPTIONS) {
      const exception = (event as unknown as Record<string, unknown>)[name];
      if (exception !== undefined) throw asError(name, exception);
    }
    if (event.contentBlockStart) {
      const { start, contentBlockIndex = 0 } = event.contentBlockStart;
      if (start?.toolUse) {
        this.#blocks.set(contentBlockIndex, {
          kind: 'toolUse',
          id: start.toolUse.toolUseId ?? '',
          name: start.toolUse.name ?? '',
          input: '',
        });
      }
      return '';
    }
    if (event.contentBlockDelta) {
      const { delta, contentBlockIndex = 0 } = event.contentBlockDelta;
      const block = this.#blocks.get(contentBlockIndex);
      if (delta?.text !== undefined) {
        if (block === undefined) this.#blocks.set(contentBlockIndex, { kind: 'text', text: delta.text });
        else if (block.kind === 'text') block.text += delta.text;
        return delta.text;
      }
      if (delta?.toolUse?.input !== undefined && block?.kind === 'toolUse')
        block.input += delta.toolUse.input;
      return '';
    }
    if (event.metadata?.usage) this.#usage = event.metadata.usage;
    return '';
  }

  /** The assistant message as Converse returns it (blocks in index order). */
  message(): ConverseMessage {
    const content = [...this.#blocks.entries()]
      .sort(([a], [b]) => a - b)
      .map(([, block]): ContentBlock => {
        if (block.kind === 'text') return { text: block.text };
        return {
          toolUse: { toolUseId: block.id, name: block.name, input: parseInput(block.input) as never },
        };
      });
    return { role: 'assistant', content };
  }

  usage(): { inputTokens?: number | undefined; outputTokens?: number | undefined } | undefined {
    return this.#usage;
  }
}

/** A tool's input as JSON text: what Converse would have returned parsed; the raw text when it is not JSON. */
function parseInput(text: string): unknown {
  if (text.trim() === '') return {};
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/** An exception event as the error the SDK names it (`throttlingException` → ThrottlingException). */
function asError(member: string, exception: unknown): Error {
  if (exception instanceof Error) return exception;
  const message = (exception as { message?: unknown } | null)?.message;
  const error = new Error(typeof message === 'string' ? message : member);
  error.name = member.charAt(0).toUpperCase() + member.slice(1);
  return error;
}
